"""The skill (or tool) graph drawn with pyvis: nodes coloured by success, edges sized by support.

* node colour: success rate in the scope, red (0) → amber → green (1); grey
  when the skill was never reached there;
* observed compositions: width grows with support (steps of b reached right
  after a); red when fragile (the 95% lower bound of the fragility clears the
  threshold), grey otherwise; the hover text gives the figures;
* prior edges (from the oracles' data flow and preconditions): dashed blue.

The HTML is self-contained (vis-network inlined, external links removed), so
it renders without network access.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

import streamlit as st
from pyvis.network import Network

from ace_graph.stats import MIN_LIFT

FRAGILE = "#d62728"
OBSERVED = "#9e9e9e"
PRIOR = "#4c78a8"
UNMEASURED = "#d0d0d0"
_EXTERNAL = re.compile(r"<(link|script)\b[^>]*(href|src)=\"https?://[^\"]*\"[^>]*>(\s*</script>)?", re.IGNORECASE)


#: Success rates at or below LOW are drawn red, HIGH green, amber half way (agents are mostly above 0.6).
LOW, HIGH = 0.6, 1.0


def success_colour(rate: float | None) -> str:
    """Hex colour for a success rate: red at LOW or below, amber half way, green at HIGH; grey for None."""
    if rate is None:
        return UNMEASURED
    r = max(0.0, min(1.0, (float(rate) - LOW) / (HIGH - LOW)))
    if r < 0.5:  # red (214, 39, 40) → amber (255, 191, 0)
        t = r / 0.5
        rgb = (214 + (255 - 214) * t, 39 + (191 - 39) * t, 40 - 40 * t)
    else:  # amber → green (44, 160, 44)
        t = (r - 0.5) / 0.5
        rgb = (255 + (44 - 255) * t, 191 + (160 - 191) * t, 44 * t)
    return "#{:02x}{:02x}{:02x}".format(*(round(c) for c in rgb))


def build_html(
    nodes: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    *,
    min_lift: float = MIN_LIFT,
    height: int = 720,
) -> str:
    """Self-contained HTML of the network for ``st.components.v1.html``."""
    net = Network(height=f"{height}px", width="100%", directed=True, cdn_resources="in_line", bgcolor="#ffffff")
    max_n = max((e["n"] or 0 for e in edges if e["edge_kind"] == "composes"), default=1) or 1
    for nd in nodes:
        rate = nd.get("success_rate")
        title = f"{nd['key']} ({nd.get('family') or '-'})\n" + (
            f"success {rate:.2f} over {nd['attempts']} reached steps" if rate is not None else "not reached in this scope"
        )
        net.add_node(
            nd["key"], label=nd["key"], title=title, color=success_colour(rate), shape="dot",
            size=12 + min(18, (nd.get("attempts") or 0) ** 0.5 / 3), font={"size": 18, "face": "sans-serif", "strokeWidth": 4, "strokeColor": "#ffffff"},
        )
    keys = {nd["key"] for nd in nodes}
    for e in edges:
        if e["from"] not in keys or e["to"] not in keys:
            continue
        if e["edge_kind"] == "composes":
            fragile = e["fragility_low"] is not None and e["fragility_low"] > min_lift
            title = (
                f"{e['from']} → {e['to']}\nreached {e['n']} times right after, failed {e['failures']}"
                f" (p_fail {e['p_fail_after']:.2f})\nfragility {e['fragility']:+.2f}, 95% lower bound "
                f"{e['fragility_low']:+.2f}" + ("  FRAGILE" if fragile else "")
            )
            net.add_edge(
                e["from"], e["to"], title=title, width=1 + 7 * (e["n"] / max_n),
                color=FRAGILE if fragile else OBSERVED, arrows="to", smooth={"type": "curvedCW", "roundness": 0.15},
            )
        else:
            net.add_edge(
                e["from"], e["to"], title=f"{e['from']} → {e['to']}\n{e['edge_kind']} in {e['n']} tasks",
                width=1.5, color=PRIOR, dashes=True, arrows="to", smooth={"type": "curvedCCW", "roundness": 0.1},
            )
    net.set_options(json.dumps({
        "physics": {
            "solver": "forceAtlas2Based",
            "forceAtlas2Based": {"gravitationalConstant": -140, "springLength": 220, "avoidOverlap": 0.8},
            "stabilization": {"iterations": 400, "fit": True},
        },
        "interaction": {"hover": True, "tooltipDelay": 100, "navigationButtons": False},
        "edges": {"arrowStrikethrough": False},
    }))
    # Stop the layout once it has settled, so the graph stays still while read.
    page = net.generate_html(notebook=False)
    page = _EXTERNAL.sub("", page)
    return page.replace(
        "return network;",
        "network.once('stabilizationIterationsDone', function () { network.setOptions({physics: false}); });\n"
        "                  return network;",
        1,
    )


@st.cache_data(ttl=600, show_spinner=False, max_entries=32)
def html_cached(nodes: list[dict[str, Any]], edges: list[dict[str, Any]], min_lift: float, height: int) -> str:
    """``build_html``, cached on its inputs (the page reruns on every widget change)."""
    return build_html(nodes, edges, min_lift=min_lift, height=height)


def legend_html() -> str:
    """A one-line legend under the graph."""
    items = [
        (f"<span style='color:{success_colour(LOW)}'>●</span> success ≤ {LOW:.0%}", ""),
        (f"<span style='color:{success_colour((LOW + HIGH) / 2)}'>●</span> {(LOW + HIGH) / 2:.0%}", ""),
        (f"<span style='color:{success_colour(HIGH)}'>●</span> {HIGH:.0%}", ""),
        (f"<span style='color:{UNMEASURED}'>●</span> not reached", ""),
        (f"<span style='color:{FRAGILE}'>━</span> fragile composition", ""),
        (f"<span style='color:{OBSERVED}'>━</span> observed composition (width = support)", ""),
        (f"<span style='color:{PRIOR}'>╌</span> prior dependency", ""),
    ]
    return " &nbsp; ".join(html.unescape(i) for i, _ in items)
