"""distractor: near-named tools that point the wrong way, offered where the choice is made.

At the target pair's decision step (the ``to`` tool ``b``), from that step's turn on
(``tools_added`` of the turn, so earlier turns do not offer them), 1-3 of ``b``'s
wrong-way twins (:mod:`ace_env.twins`) are offered beside it and declared
distractors: ``get_stock_info_delayed`` beside ``get_stock_info``, ``preview_order``
beside ``place_order``, ``hold_flight`` beside ``book_flight``.  A twin is a real,
executable function on the same BFCL instance as ``b``: it returns a plausible
result or changes state the wrong way, so the verifier (the state after the turn,
the outputs, the next step's arguments), not a missing function, rejects the wrong
choice.

A twin is offered only when it is a real choice at that step: called in place of
``b`` with ``b``'s arguments, the task must fail (a ``print_text`` beside an
``echo`` that only prints would be the same call, and is not offered).  A twin the
seed already offers is never new, and a task whose ground truth would call a twin
is not made.  A ``b`` without twins gets no distractor (the planner does not plan
one there).

A twin is offered only when its wrong way is **stated** (issue 34: a flight distance beside the road
distance in a task that never says the user drives is argued by context the task does not state).  For each
twin :data:`STATED` holds what its doc says it does not do (a phrase of the twin's own description) and a
cue: the words of a request that asks for exactly that ("book", "send", "live price", "drive").  The twin is
offered when the text up to the decision turn has the cue (``doc``: the doc says what the twin does not do,
the text asks for it); otherwise, when the twin has a sentence that states the requirement ("I'll be driving
there."), that sentence is added to the decision turn's request (``text``); otherwise it is not offered.
What was applied is the task's ``provenance["stated"]``: per twin, where (``doc`` or ``text``), the doc's
phrase and the text's words; a declared check (:func:`stated_problems`) finds both again.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass
from typing import Any

from ace_env import twins
from ace_env.calls import Call, parse_call
from ace_env.environments import tool_catalogue_of
from ace_env.executor import copy_json
from ace_env.oracle import replay_oracle
from ace_env.tasks import Task
from ace_env.toolcatalogue import ToolCatalogue
from ace_env.verifier import ground_truth_rollout, verify
from synth.checks.parts import (
    DISTRACTOR_MOOT,
    DISTRACTOR_NAMED,
    DISTRACTOR_NOT_NEW,
    DISTRACTOR_UNSTATED,
    flat_calls,
    target_step,
    user_text_upto,
)
from synth.checks.values import _json_or_none
from synth.registry import Check, register
from synth.strategies.build import build, copy_turns, memoized, pick_position
from synth.strategies.neutral import QUOTED, checked_words, named_words, neutral_request


@dataclass(frozen=True)
class Stated:
    """How a twin's wrong way is stated: ``doc`` a phrase of its description saying what it does not do (or what
    it does instead), ``cue`` the words of a request that asks for what it does not do, ``say`` a sentence that
    states the requirement, added to the decision turn when the text lacks the cue (None: not offered then)."""

    doc: str
    cue: str
    say: str | None = None
    topic: str = ""  # the words of the request ``say`` follows (it goes right after the first sentence with them)
    tempt: str = ""  # the words of a request the twin seems to answer (its wrong way is tempting there); "" any
    says: tuple[str, ...] = ()  # other phrasings of ``say`` (the task's rng picks one); none names the contrast
    #: Requests in the twin's own words ("a quick summary", "a quote") that state a need its doc says it does not
    #: meet ("as it stands right now"): the main form (blind review s7b: only such a pull toward the twin bit)
    lures: tuple[str, ...] = ()

    def phrasings(self) -> tuple[str, ...]:
        """``say`` and its other phrasings: each states the user's need, none the wrong way it rules out."""
        return ((self.say,) if self.say is not None else ()) + self.says


_NOW = r"\b(?:current(?:ly)?|live|real[- ]time|latest|right now|up[- ]to[- ]date|at the moment|today)\b"
_DATE = (r"\b(?:business|first|economy)(?:[- ]class)?\b|\b\d{4}-\d{2}-\d{2}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|"
         r"oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?\b")
_PRICE = r"\bprice|\bquote|\bstock|\bshares?\b|\bequit\w*|\bmarket|\btrading"
#: A request for the order's state now ("latest" or "today" name which order or when, not the state's age).
_STATE_NOW = r"\b(?:current(?:ly)?|live|real[- ]time|right now|up[- ]to[- ]date|at the moment|as it stands)\b"
_DETAILS = (r"\bdetail\w*|\bsummar\w*|\bparticulars?\b|\bspecifics\b|\boverview\b|\brundown\b|\brecap\b|"
            r"\binformation\b|\binfo\b|\bthorough\b|\bclose look\b")
_ORDER = r"\border|\btrade|\bbuy|\bpurchas|\bacquir|\bsell|\bshares\b"
STATED: dict[str, Stated] = {
    "startEngineCheck": Stated("The engine itself is neither started nor stopped", r"\bstart|\bignit|\bfire up",
                               tempt=r"\bengine|\bstart|\bignit|\bready",
                               lures=("Check whatever you need to, but the engine has to end up started.",)),
    "pressBrakePedalOnce": Stated("the pedal is released again right after the press",
                                  r"\b(?:press|hold|push|keep|apply|engag)\w*", tempt=r"\bbrake|\bpedal"),
    "estimate_flight_distance": Stated("as a plane flies", r"\b(?:driv\w*|road|by car|on the road)\b",
                                       "I'll be driving there, so I need the road distance.",
                                       r"\bdistance|\bhow far\b|\bfar\b", r"\bdistance|\bhow far\b|\bfar\b",
                                       says=("I'm going by car.", "I'll drive there myself.",
                                             "We'll make the trip on the road."),
                                       lures=("No flight this time: I'll be driving, so it's the road distance I "
                                              "need.",)),
    "get_area_code_based_on_city": Stated("telephone area code", r"\bzip\s?codes?\b|\bzip\b|\bpostal",
                                          tempt=r"\bcodes?\b"),
    "print_text": Stated("nothing is written to any file", r"\bfile\b|\bwrite\b|\bsave\b",
                         tempt=r"\bwrite|\bput|\btext|\bcontent|\becho|\bprint"),
    "touch_existing": Stated("A file that does not exist is not created",
                             r"\b(?:creat|make|generat|new|set up|start)\w*", tempt=r"\bfile|\btouch"),
    "stat": Stated("Show the status of a file", r"\b(?:creat|make|generat|new|set up|start)\w*",
                   tempt=r"\bfile|\btouch"),
    "get_flight_cost_estimate": Stated("the typical economy fare on an ordinary weekday", _DATE,
                                       tempt=r"\bcost|\bfare|\bprice|\bhow much|\bestimat",
                                       lures=("An estimate of the fare is all I need, but for the date and class I "
                                              "gave.",)),
    "hold_flight": Stated("Nothing is booked or charged", r"\b(?:book|reserv|purchas|buy|secur|arrang)\w*",
                          tempt=r"\bflight|\bseat|\bbook|\breserv|\bticket"),
    "request_booking_refund": Stated("the request is reviewed by an agent later",
                                     r"\bcancel\w*|\bcall(?:s|ed|ing)? off\b|\bcall-off\b",
                                     tempt=r"\bcancel|\bcall(?:s|ed|ing)? off\b|\bcall-off\b|\brefund|\bmoney back",
                                     lures=("I want my refund, so the reservation has to be called off today.",)),
    "retrieve_invoice_preview": Stated("for the account's earliest booking on file",
                                       r"\b(?:just|new(?:ly)?|recent(?:ly)?|that|this)\b[^.?!]{0,40}"
                                       r"\b(?:book\w*|flight|reservation|trip|ticket)\b",
                                       "It's for this reservation I just made.",
                                       r"\binvoice|\bbill", r"\binvoice|\bbill",
                                       says=("I need the one for this latest trip specifically.",
                                             "Make sure it covers this new reservation."),
                                       lures=("A quick preview of the bill is fine, as long as it's for this "
                                              "reservation I just made.",
                                              "Just a preview is enough, but it has to cover this new "
                                              "reservation.",
                                              "Pull up the preview of the bill for this reservation I just made.")),
    # a receipt answers a question about the payment or the charge; asked for the invoice by name, it is no trap
    "retrieve_payment_receipt": Stated("card payment receipt", r"\binvoice|\bbill\b|\bbilling statement",
                                       tempt=r"\bpa(?:y|id)\w*|\bcharge\w*|\bexpens\w*|\bspent\b|\bcost"),
    "contact_sales_team": Stated("for upgrades and offers",
                                 r"\b(?:support|complain\w*|issue|problem|assist\w*|concern\w*|feedback|help desk)\b",
                                 tempt=r"\bcontact|\breach|\bmessage|\bget in touch|\bspeak"),
    "get_stock_info_delayed": Stated("quotes are 15 minutes behind the market", _NOW,
                                     "I need the live price.", _PRICE, _PRICE,
                                     says=("I'm about to trade on it, so the live price matters.",
                                           "Please use the price as it is right now.",
                                           "I want the real-time figure.")),
    "get_stock_quote_cached": Stated("as of the last market close", _NOW,
                                     "I need today's live price.", _PRICE, _PRICE,
                                     says=("I'm about to trade on it, so the live price matters.",
                                           "Please use the price as it is right now.",
                                           "I want the real-time figure."),
                                     lures=("Grab me a quote on it; I'm about to trade, so it has to be the price "
                                            "right now.",
                                            "A quick quote will do, as long as it's the live one.",
                                            "Pull up a quote for it as it is at the moment.")),
    "preview_order": Stated("without placing it",
                            r"\b(?:plac|buy|bought|sell|sold|purchas|execut|submit|order|trade|put in)\w*",
                            tempt=_ORDER),
    "schedule_order": Stated("when the market next opens",
                             r"\b(?:now|immediately|right away|at once|straight away|today)\b",
                             "It should go through right away.", _ORDER, _ORDER,
                             says=("I'd like it done right away.", "Please put it through immediately.",
                                   "It needs to happen now."),
                             lures=("Schedule the order so it goes through right away.",
                                    "Go ahead and schedule the trade; it needs to happen now.")),
    # a cached status is tempting only where the request asks about the order's status (not its full details)
    "get_order_status_cached": Stated("from the order cache", _STATE_NOW,
                                      "I'd like to know where it stands right now.",
                                      r"\bstatus\b|\bstanding\b|\bstate\b|\bprogress\b|\bverif\w*|\bconfirm\w*",
                                      r"\bstatus\b|\bstanding\b|\bstate\b|\bprogress\b|\bgone through\b|"
                                      r"\bwent through\b|\bfilled\b|\bexecuted\b|\bverif\w*|\bconfirm\w*",
                                      says=("It may have moved on since it went in, so tell me where it stands "
                                            "right now.",
                                            "I need its position at the moment, freshly checked.",
                                            "Please look at it fresh: I want its up-to-date position."),
                                      lures=("What's its status right now?",
                                             "A quick status check will do: where does it stand at the moment?")),
    # a summary answers a request for the order's details; the request says it wants them as they stand now
    # (stated in the text: review bfcl3 found a request for "a summary" with the doc alone against the twin unfair)
    "get_order_summary": Stated("as recorded when it was placed", _STATE_NOW,
                                "I'd like to see where it stands right now.",
                                _DETAILS, _DETAILS,
                                says=("It may have changed since it went in, so I need it as it stands right "
                                      "now.",
                                      "Its state could have shifted since then; show me where it is at the "
                                      "moment.",
                                      "Things could have moved since I made it, so I want its up-to-date "
                                      "position."),
                                lures=("A short summary will do, as long as it shows where it stands right now.",
                                       "Just give me a quick summary of it as it stands at the moment.",
                                       "Summarize it for me, with its status as it is right now.")),
    "save_message_draft": Stated("as a draft", r"\bsend\w*|\bdeliver\w*|\bnotify\w*|\bsent\b",
                                 "Make sure it actually gets sent.", r"\bmessage|\bnote\b|\bsend|\btell\b",
                                 r"\bmessage|\bnote\b|\bsend|\btell\b|\bwrite\b",
                                 says=("They need to get it today, so please send it.",
                                       "Please make sure it is delivered.", "I want it sent straight away."),
                                 lures=("I've got the draft worded already; please make sure it is delivered.",)),
}


#: A lure that settles for less ("a quick summary will do") and a request that asks for everything ("the full
#: particulars", "a proper invoice"): the two together would read as a contradiction, so no lure is added there.
_MODEST = re.compile(r"\b(?:quick|short|just|will do|is fine|is enough|all I need)\b", re.I)
_THOROUGH = re.compile(r"\b(?:proper|full|complete|comprehensive|thorough|entire|every|in[- ]depth|close)\b", re.I)


def request_sentences(name: str, text: str) -> list[str]:
    """The sentences of the decision turn's ``text`` that make the request twin ``name`` seems to answer (its
    ``tempt`` words; every sentence where it has none); quoted strings are left out (a message's words ask for
    nothing).  Empty: the twin is no temptation at that step."""
    stated = STATED.get(name)
    body = QUOTED.sub("", text)  # an apostrophe inside a word ("it's") opens no quote
    parts = [p for p in re.split(r"(?<=[.?!])\s+|\n+", body) if p.strip()]
    if stated is None or not stated.tempt:
        return parts
    return [p for p in parts if re.search(stated.tempt, p, re.I)]


def stated_reason(name: str, text: str) -> dict[str, str] | None:
    """How the wrong way of twin ``name`` is stated given the decision turn's request ``text``: None where the
    twin is no temptation (no sentence asks what it seems to answer: :func:`request_sentences`);
    ``{"where": "doc", "doc": ..., "text": <the request's words>}`` when a sentence making that request asks for
    what the doc says the twin does not do (a stray word elsewhere in the turn does not count);
    ``{"where": "text", ...}`` when the twin's sentence must be added (the caller adds it, one of
    :meth:`Stated.phrasings` drawn by the task's rng, so tasks do not share one canned sentence); None when
    neither states it."""
    stated = STATED.get(name)
    if stated is None or stated.doc not in twins.TWINS[name].description:
        return None
    asked = request_sentences(name, text)
    if not asked:
        return None
    m = re.search(stated.cue, " ".join(asked), re.I)
    if m is not None:
        return {"where": "doc", "doc": stated.doc, "text": m.group(0)}
    if stated.say is not None:
        return {"where": "text", "doc": stated.doc, "text": stated.say}
    return None


_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")


def _request_turn(turns: list[Any], at: int, sentence: str, topic: str = "") -> bool:
    """Put ``sentence`` into the last user message of turn ``at``: right after its first sentence with the
    request's words (``topic``), else at its end; False when the turn has no user message."""
    for m in reversed(turns[at].user):
        if m.get("role") == "user" and m.get("content"):
            body = m["content"].rstrip()
            quoted = [q.span() for q in QUOTED.finditer(body)]  # never a break inside a message's quoted words
            cuts = [c.span() for c in _SENTENCE_END.finditer(body) if not any(a < c.start() < b for a, b in quoted)]
            parts = [body[s0:e0] for s0, e0 in zip([0] + [e for _, e in cuts], [s for s, _ in cuts] + [len(body)])]
            hit = next((i for i, p in enumerate(parts) if topic and re.search(topic, p, re.I)), None)
            if hit is None or hit == len(parts) - 1 or parts[hit][-1:] not in ".?!":
                m["content"] = body + ("" if body[-1:] in ".?!" else ".") + " " + sentence
            else:
                m["content"] = " ".join(parts[:hit + 1] + [sentence] + parts[hit + 1:])
            return True
    return False


@functools.cache
def loads_empty(tools: ToolCatalogue, cls: str) -> bool:
    """Whether a class of ``tools`` (the seed's environment's catalogue) loads from an empty configuration (the
    random baseline adds such classes)."""
    try:
        tools.instance(cls, {})
    except Exception:
        return False
    return True


def with_distractors(seed: Task, chosen: list[str]) -> tuple[list[str], list[str], dict[str, Any], list[str]]:
    """(classes, tools, config, distractors) of the seed with ``chosen`` offered and declared distractors.

    A BFCL function of a class the seed does not involve brings its class (the random baseline's kind);
    a twin runs on its real tool's class, which the seed involves, and is listed right before its real tool (a
    reader scanning the list meets the wrong way first, and the real tool's entry does not come right before a
    twin that repeats its name and parameters).
    """
    classes = list(seed.involved_classes)
    config = copy_json(seed.initial_config)
    for name in chosen:
        cls = twins.class_of(name)
        if cls is not None and cls not in classes:
            classes.append(cls)
    tools = list(seed.tools)
    for name in chosen:
        if name in tools:
            continue
        twin = twins.TWINS.get(name)
        at = tools.index(twin.real) if twin is not None and twin.real in tools else len(tools)
        tools.insert(at, name)  # right before the real tool (and before any twin already there)
    distractors = list(seed.distractors) + [n for n in chosen if n not in seed.distractors]
    return classes, tools, config, distractors


def twin_candidates(seed: Task, name: str) -> list[str]:
    """The twins of ``name`` a task made from ``seed`` may offer: not offered by the seed (as a tool or a
    distractor) and not called by its ground truth."""
    used = {n for _, _, _, n in flat_calls(seed)}
    offered = set(seed.tools) | set(seed.distractors)
    return [t for t in twins.twins_of(name) if t not in offered and t not in used]


def _in_place_of(task: Task, k: int, twin: str) -> list[list[str]] | None:
    """The task's ground truth with its ``k``-th call made to ``twin`` (same arguments), or None."""
    t, i, raw, _ = flat_calls(task)[k]
    call = parse_call(raw)
    if not isinstance(call, Call):
        return None
    rollout = ground_truth_rollout(task)
    rollout[t][i] = Call(twin, call.args, call.kwargs).render()
    return rollout


def _real_choices(seed: Task, k: int, at: int, cands: list[str]) -> list[str]:
    """The candidates that, offered from turn ``at`` and called in place of the ``k``-th call (its arguments),
    fail the task: the verifier, by state, outputs or later arguments, tells them from the real tool; and whose
    output there is not all the real tool's (:func:`_covers`: the twin's shortcoming comes into play)."""
    classes, tools, config, distractors = with_distractors(seed, cands)
    turns = copy_turns(seed.turns)
    turns[at].tools_added = turns[at].tools_added + [n for n in cands if n not in turns[at].tools_added]
    probe = Task(f"{seed.id}~twins", "ace", "distractor", turns, config, classes, tools, seed.long_context, {},
                 distractors, list(seed.output_views))
    oracle = replay_oracle(probe)  # not cached: the probe is never kept
    real = _json_or_none([st for turn in oracle.turns for st in turn.steps][k].output or "")
    out = []
    for twin in cands:
        rollout = _in_place_of(probe, k, twin)
        if rollout is None:
            continue
        verdict = verify(probe, rollout, oracle=oracle)
        got = _json_or_none(next((st.output for turn in verdict.steps for st in turn if st.name == twin), None) or "")
        if verdict.reward == 0.0 and not (real is not None and _covers(got, real)):  # its shortcoming shows here
            out.append(twin)
    return out


# --------------------------------------------------------------------------- its checks


def distractor_problems(task: Task) -> list[str]:
    """For a distractor task: each added distractor must be a tool the seed did not already offer, i.e. a
    function of a class the seed does not involve (``provenance["seed_classes"]``), never one the ground
    truth calls.  BFCL offers every function of an involved class, so one of those distracts nothing."""
    if task.provenance.get("strategy") != "distractor":
        return []
    seed_classes = set(task.provenance.get("seed_classes") or [])
    added = task.provenance.get("added_distractors") or []
    if not added:
        return ["no distractor was added"]
    used = {name for _, _, _, name in flat_calls(task)}
    functions = tool_catalogue_of(task).functions()
    out = []
    for name in added:
        info = functions.get(name)
        if twins.is_twin(name):  # ACE's wrong-way twin: new unless the seed offered it already
            if name in (task.provenance.get("seed_tool_names") or []):
                out.append(f"{name} is already offered by the seed")
            elif name in used:
                out.append(f"{name} is called by the ground truth")
            elif name not in task.distractors or name not in task.tools:
                out.append(f"{name} is not offered as a distractor")
            continue
        if info is None or info.class_name in seed_classes:
            out.append(f"{name} is already offered by the seed (its class {getattr(info, 'class_name', '?')} is involved)")
        elif name in used:
            out.append(f"{name} is called by the ground truth")
        elif name not in task.distractors or name not in task.tools:
            out.append(f"{name} is not offered as a distractor")
    return out


def stated_problems(task: Task) -> list[str]:
    """For a distractor task: each added twin's wrong way is stated (``provenance["stated"]``): its doc phrase
    is in the twin's description and its words are in the user text up to the distractor's turn."""
    if task.provenance.get("strategy") != "distractor":
        return []
    stated = task.provenance.get("stated") or {}
    at = int(task.provenance.get("distractor_turn") or 0)
    text = user_text_upto(task, min(at, len(task.turns) - 1)).lower()
    out = []
    for name in task.provenance.get("added_distractors") or []:
        if not twins.is_twin(name):
            continue
        s = stated.get(name)
        if not s:
            out.append(f"{name}: its wrong way is stated nowhere")
        elif s.get("doc", "") not in twins.TWINS[name].description:
            out.append(f"{name}: {s.get('doc')!r} is not in its doc")
        elif str(s.get("text", "")).lower() not in text:
            out.append(f"{name}: {s.get('text')!r} is not in the text")
    return out


def decision_text(task: Task, at: int) -> str:
    """The user's words in turn ``at`` (the decision turn: the request the twins are offered for)."""
    return "\n".join(m.get("content", "") or "" for m in task.turns[at].user if m.get("role") == "user")


def named_problems(task: Task) -> list[str]:
    """For a distractor task: the decision turn's request says no word of the right tool's or an added twin's
    name (outside quoted strings): "the details of my order" names ``get_order_details`` and makes
    ``get_order_summary`` a free pass (blind review s6, 6 of 9 tasks)."""
    if task.provenance.get("strategy") != "distractor":
        return []
    at = int(task.provenance.get("distractor_turn") or 0)
    chosen = [c for c in task.provenance.get("added_distractors") or [] if twins.is_twin(c)]
    if not chosen:
        return []
    said = named_words(decision_text(task, at), checked_words(str(task.provenance.get("twin_of") or ""), *chosen))
    return [f"the request says {w!r}, a word of a tool's name" for w in said]


def _covers(twin_out: Any, real_out: Any) -> bool:
    """Whether ``twin_out`` shows everything ``real_out`` shows: every key the real output has, with the same
    value, at the same place (the twin's shortcoming does not come into play)."""
    if isinstance(real_out, dict):
        return isinstance(twin_out, dict) and all(k in twin_out and _covers(twin_out[k], v) for k, v in real_out.items())
    if isinstance(real_out, list):
        return isinstance(twin_out, list) and len(twin_out) == len(real_out) and all(
            _covers(a, b) for a, b in zip(twin_out, real_out))
    return twin_out == real_out


def twin_outputs(task: Task, k: int, chosen: list[str], oracle: Any = None) -> dict[str, tuple[Any, Any]]:
    """Per twin: (its output, the right tool's) when called in place of flat call ``k`` with the same arguments,
    executed on the task's state (parsed JSON; None where it did not run)."""
    oracle = oracle or replay_oracle(task)
    real = [st for turn in oracle.turns for st in turn.steps][k].output
    out = {}
    for twin in chosen:
        rollout = _in_place_of(task, k, twin)
        got = None
        if rollout is not None:
            verdict = verify(task, rollout, oracle=oracle)
            got = next((st.output for turn in verdict.steps for st in turn if st.name == twin), None)
        out[twin] = (_json_or_none(got or ""), _json_or_none(real or ""))
    return out


def moot_problems(task: Task, oracle: Any = None) -> list[str]:
    """For a distractor task whose twin reads (it changes nothing): executed in place of the right tool on this
    state, the twin must show something other than what the right tool shows; a preview of "the earliest booking"
    when the booking asked for is the earliest one is no trap (blind review s6, task 10)."""
    if task.provenance.get("strategy") != "distractor":
        return []
    k = target_step(task)
    chosen = [c for c in task.provenance.get("added_distractors") or [] if twins.is_twin(c)]
    if k is None or not chosen:
        return []
    return [f"{twin} shows all that {task.provenance.get('twin_of')} shows on this state"
            for twin, (got, real) in twin_outputs(task, k, chosen, oracle).items()
            if real is not None and _covers(got, real)]


@register("distractor", depth=2, build_last=True,
          checks=(Check(DISTRACTOR_NOT_NEW, lambda c: distractor_problems(c.task)),
                  Check(DISTRACTOR_UNSTATED, lambda c: stated_problems(c.task)),
                  Check(DISTRACTOR_NAMED, lambda c: named_problems(c.task)),
                  Check(DISTRACTOR_MOOT, lambda c: moot_problems(c.task, c.oracle), needs_clean_run=True)),
          definition="executable wrong-way twins of b (near names, opposite or adjacent effects), new to the seed, "
                     "are offered at the decision step and declared wrong",
          needs="a wrong-way twin of b the seed does not offer")
def distractor(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    k = pick_position(seed, target, rng)
    if k is None:
        return None
    at = flat_calls(seed)[k + 1][0]  # the decision step's turn: the twins arrive there, not in turn 1
    cands = twin_candidates(seed, target[1])
    cands = list(memoized("real_choices", seed, (k, at, tuple(cands)),
                          lambda: tuple(_real_choices(seed, k + 1, at, cands)))) if cands else []
    # the request is rewritten so it does not name the right tool ("details" -> "particulars"); a twin's words stay
    # every word of b's name some candidate lacks: the twins drawn below may be any of them
    words = sorted({w for c in cands for w in checked_words(target[1], c)})
    rewritten = {}
    for j, m in enumerate(seed.turns[at].user):
        if m.get("role") == "user" and m.get("content"):
            new = neutral_request(m["content"], words, rng)
            if new is None:
                return None  # a name word with no neutral rewrite: the request would name the tool
            rewritten[j] = new
    text = "\n".join(rewritten.values())
    reasons = {c: stated_reason(c, text) for c in cands}
    cands = [c for c in cands if reasons[c] is not None]  # a wrong way nobody states is no fair trap
    if not cands:
        return None
    n = min(len(cands), 1 + round(strength * 2))
    chosen = sorted(rng.sample(cands, n), key=cands.index)
    for c in chosen:  # drawn after the choice of twins, so which twins are offered does not depend on it
        if reasons[c]["where"] != "text":
            continue
        reasons[c] = {**reasons[c], "text": rng.choice(STATED[c].phrasings())}
    turns = copy_turns(seed.turns)
    for j, new in rewritten.items():
        turns[at].user[j]["content"] = new
    added: list[str] = []
    # the main form: one twin's lure, a request in its own words that states the need its doc says it misses
    for c in [c for c in chosen if STATED[c].lures]:
        lure = rng.choice(STATED[c].lures)
        if _MODEST.search(lure) and _THOROUGH.search(text):
            continue  # "a quick summary will do" after "the full particulars" would contradict the request
        m = re.search(STATED[c].cue, " ".join(request_sentences(c, text + " " + lure)), re.I)
        if m is None or not _request_turn(turns, at, lure, STATED[c].topic):
            continue
        reasons[c] = {"where": "lure", "doc": STATED[c].doc, "text": m.group(0), "lure": lure}
        added.append(lure)
        break
    for c in list(chosen):
        said = reasons[c]["text"]
        if reasons[c]["where"] != "text" or said in added:
            continue
        if added:  # one added sentence per turn: a second twin is offered only if that sentence states it too
            m = re.search(STATED[c].cue, " ".join(added), re.I)
            if m is None:
                chosen.remove(c)
                continue
            reasons[c] = {**reasons[c], "text": m.group(0)}
            continue
        if not _request_turn(turns, at, said, STATED[c].topic):
            return None
        added.append(said)
    if named_words("\n".join(m.get("content", "") or "" for m in turns[at].user if m.get("role") == "user"),
                   checked_words(target[1], *chosen)):
        return None
    classes, tools, config, distractors = with_distractors(seed, chosen)
    turns[at].tools_added = turns[at].tools_added + [n for n in chosen if n not in turns[at].tools_added]
    return build(seed, "distractor", target, strength,
                 f"wrong-way twins of {target[1]} offered from turn {at + 1}: {', '.join(chosen)}",
                 turns=turns, config=config, classes=classes, tools=tools, distractors=distractors,
                 extra={"added_distractors": chosen, "twin_of": target[1],
                        "wrong_way": {c: twins.TWINS[c].wrong_way for c in chosen},
                        "seed_classes": list(seed.involved_classes), "seed_tools": len(seed.tools),
                        "seed_tool_names": list(seed.tools), "distractor_turn": at,
                        "stated": {c: reasons[c] for c in chosen}})
