"""ACE's tool-aware ChatML template, in the Hermes / Qwen2.5 form.

Models whose own chat template has no tool section (SmolLM2's is plain ChatML)
get this one.  It is the form TRL's tool-call parsing and vLLM's ``hermes`` tool
parser recognise:

* the offered tools go into the system message, inside ``<tools></tools>``;
* an assistant turn writes each call as ``<tool_call>{"name", "arguments"}</tool_call>``;
* tool results come back in a user turn as ``<tool_response>...</tool_response>``;
* assistant turns are wrapped in ``{% generation %}`` so trainers can put the
  loss on assistant tokens only (``return_assistant_tokens_mask``).

The tool listing is **compact** by default: one line per tool,
``- name(arg: type, optional?: type): what it does``, a few hundred tokens for a
BFCL task instead of thousands for the full JSON schemas (pass
``compact_tools=False`` to the template, e.g. as ``chat_template_kwargs`` of a
vLLM request, for the full schemas).
"""

from __future__ import annotations

from pathlib import Path

ACE_CHAT_TEMPLATE = (
    "{%- set compact = compact_tools if compact_tools is defined else true -%}"
    "{%- if messages and messages[0].role == 'system' -%}"
    "{%- set system = messages[0].content -%}{%- set rest = messages[1:] -%}"
    "{%- else -%}"
    "{%- set system = 'You are a helpful assistant.' -%}{%- set rest = messages -%}"
    "{%- endif -%}"
    "{{- '<|im_start|>system\\n' + system -}}"
    "{%- if tools -%}"
    "{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n' -}}"
    "{%- if compact -%}"
    "{{- 'You are provided with function signatures within <tools></tools> XML tags, one per line as "
    "name(argument: type, optional_argument?: type): what it does.\\n<tools>' -}}"
    "{%- for tool in tools -%}"
    "{%- set fn = tool.function if tool.function is defined else tool -%}"
    "{%- set req = fn.parameters.required if (fn.parameters is defined and fn.parameters.required is defined) else [] -%}"
    "{{- '\\n- ' + fn.name + '(' -}}"
    "{%- if fn.parameters is defined and fn.parameters.properties is defined -%}"
    "{%- for pname, p in fn.parameters.properties.items() -%}"
    "{{- pname + ('' if pname in req else '?') + ': ' + (p.type | string if p.type is defined else 'any') -}}"
    "{%- if not loop.last %}{{- ', ' -}}{% endif -%}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{{- '): ' + ((fn.description or '').split('Tool description: ') | last).split('. ') | first -}}"
    "{%- endfor -%}"
    "{{- '\\n</tools>' -}}"
    "{%- else -%}"
    "{{- 'You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' -}}"
    "{%- for tool in tools -%}{{- '\\n' + (tool | tojson) -}}{%- endfor -%}"
    "{{- '\\n</tools>' -}}"
    "{%- endif -%}"
    "{{- '\\n\\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\\n</tool_call>' -}}"
    "{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- for m in rest -%}"
    "{%- if m.role == 'user' or m.role == 'system' -%}"
    "{{- '<|im_start|>' + m.role + '\\n' + (m.content or '') + '<|im_end|>\\n' -}}"
    "{%- elif m.role == 'assistant' -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- generation -%}"
    "{{- m.content or '' -}}"
    "{%- if m.tool_calls -%}"
    "{%- for tc in m.tool_calls -%}"
    "{%- set f = tc.function if tc.function is defined else tc -%}"
    "{%- if (m.content or '') or not loop.first -%}{{- '\\n' -}}{%- endif -%}"
    "{{- '<tool_call>\\n{\"name\": \"' + f.name + '\", \"arguments\": ' -}}"
    "{%- if f.arguments is string -%}{{- f.arguments -}}{%- else -%}{{- f.arguments | tojson -}}{%- endif -%}"
    "{{- '}\\n</tool_call>' -}}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{{- '<|im_end|>' -}}"
    "{%- endgeneration -%}"
    "{{- '\\n' -}}"
    "{%- elif m.role == 'tool' -%}"
    "{%- if loop.first or loop.previtem.role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}"
    "{{- '\\n<tool_response>\\n' + (m.content or '') + '\\n</tool_response>' -}}"
    "{%- if loop.last or loop.nextitem.role != 'tool' -%}{{- '<|im_end|>\\n' -}}{%- endif -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)


def has_tool_support(template: str | None) -> bool:
    """Whether a model's own chat template renders tools (else ACE's is used)."""
    return bool(template) and "tools" in template and "tool_call" in template


def write_template(path: str | Path) -> Path:
    """Write ACE's template to a file (for ``vllm serve --chat-template``)."""
    path = Path(path)
    path.write_text(ACE_CHAT_TEMPLATE, encoding="utf-8")
    return path
