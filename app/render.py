"""HTML pieces the pages show: the rollout transcript beside the oracle's."""

from __future__ import annotations

from html import escape

from ace_graph.transcripts import Transcript

_CSS = """
<style>
table.ace-tx {border-collapse: collapse; width: 100%; font-size: 0.85rem; table-layout: fixed;}
table.ace-tx th, table.ace-tx td {border: 1px solid #ddd; padding: 4px 6px; vertical-align: top;
  word-break: break-word;}
table.ace-tx th {background: #f4f4f6; text-align: left;}
table.ace-tx td.user {background: #f8f9fb; color: #333; font-style: italic;}
table.ace-tx td.fail {background: #fde2e1; border: 2px solid #d62728;}
table.ace-tx code {font-size: 0.8rem; white-space: pre-wrap;}
table.ace-tx .out {color: #555; font-size: 0.75rem;}
</style>
"""


def _cell(step, css: str = "") -> str:
    if step is None:
        return f"<td class='{css}'></td>"
    cls = "fail" if step.failing else css
    status = f" <b>[{escape(step.status)}]</b>" if step.status and step.status != "ok" else ""
    mark = "<b>✗ first failing step</b><br>" if step.failing else ""
    out = f"<div class='out'>→ {escape(step.output)}</div>" if step.output else ""
    return f"<td class='{cls}'>{mark}<code>{escape(step.call)}</code>{status}{out}</td>"


def transcript_html(t: Transcript) -> str:
    """Turn by turn: the user's request, then the rollout's calls beside the oracle's (failing step in red)."""
    turns = sorted({s.turn for s in t.rollout_steps} | {s.turn for s in t.oracle_steps} | set(range(len(t.user))))
    parts = [_CSS, "<table class='ace-tx'><colgroup><col style='width:4rem'><col><col></colgroup>",
             "<tr><th>turn</th><th>rollout (what the agent called → result)</th>"
             "<th>oracle (ground truth → result)</th></tr>"]
    for turn in turns:
        if turn < len(t.user) and t.user[turn]:
            parts.append(f"<tr><td>{turn}</td><td class='user' colspan='2'>user: {escape(t.user[turn][:600])}</td></tr>")
        ro = [s for s in t.rollout_steps if s.turn == turn]
        ob = [s for s in t.oracle_steps if s.turn == turn]
        for i in range(max(len(ro), len(ob), 0)):
            a = ro[i] if i < len(ro) else None
            b = ob[i] if i < len(ob) else None
            parts.append(f"<tr><td>{turn}.{i}</td>{_cell(a)}{_cell(b)}</tr>")
        if not ro and not ob:
            parts.append(f"<tr><td>{turn}</td><td colspan='2'>(no calls)</td></tr>")
    parts.append("</table>")
    return "".join(parts)
