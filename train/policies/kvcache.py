"""Key/value states reused between generate calls, found by longest common prefix.

Most of a rollout's prompt tokens were seen before:

* every conversation of a task family starts with the same system prompt and
  tool listing;
* the G samples of a task share their whole first prompt;
* a conversation's prompt at step k+1 is its prompt at step k, its answer and
  the tool results.

One mechanism serves all three.  :class:`PrefixCache` keeps token sequences
with the key/value states the model computed for them; a new prompt takes the
states of its longest common prefix with any kept sequence, and the model
computes only the rest (:meth:`train.policies.hf.HFPolicy.generate`).  States
depend only on the tokens before them (causal attention), so reused states are
exactly those a full forward pass computes, up to floating-point rounding.

The cache assumes the model's weights do not change while it is in use: a
policy that samples from a model being trained is built afresh for each
training step (see :mod:`train.grpo`), or calls :meth:`PrefixCache.clear`.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

#: Key and value states of one sequence, per layer: tensors ``[1, heads, tokens, head_dim]``.
LayerStates = list[tuple[Any, Any]]


@dataclass(eq=False)
class _Entry:
    ids: Any  # 1-D long tensor of the sequence's tokens
    states: LayerStates

    def __len__(self) -> int:
        return int(self.ids.shape[0])


def common_prefix(a: Any, b: Any) -> int:
    """Length of the longest common prefix of two 1-D token tensors."""
    n = min(a.shape[0], b.shape[0])
    if n == 0:
        return 0
    differ = (a[:n] != b[:n]).nonzero()
    return int(differ[0, 0]) if differ.numel() else n


class PrefixCache:
    """Token sequences and their key/value states, at most ``max_tokens`` tokens in all (least recently used go first)."""

    def __init__(self, max_tokens: int):
        self.max_tokens = max_tokens
        self._entries: list[_Entry] = []  # least recently used first
        #: Prompt tokens whose states came from the cache, and those the model computed.
        self.reused_tokens = 0
        self.computed_tokens = 0

    @property
    def tokens(self) -> int:
        return sum(len(e) for e in self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    def longest_prefix(self, ids: Any) -> tuple[int, LayerStates]:
        """(n, states of ``ids[:n]``) for the kept sequence sharing the longest prefix with ``ids`` (0, [] if none)."""
        best, best_n = None, 0
        for entry in self._entries:
            n = common_prefix(entry.ids, ids)
            if n > best_n:
                best, best_n = entry, n
        if best is None:
            return 0, []
        self._entries.remove(best)
        self._entries.append(best)  # most recently used
        return best_n, [(k[:, :, :best_n], v[:, :, :best_n]) for k, v in best.states]

    def add(self, ids: Any, states: LayerStates) -> None:
        """Keep ``ids`` with its states (``states`` cover exactly ``ids``; tensors the cache may keep as they are)."""
        if len(ids) == 0 or len(ids) > self.max_tokens:
            return
        for k, _ in states:
            if k.shape[-2] != len(ids):
                raise ValueError(f"states of {k.shape[-2]} tokens for a sequence of {len(ids)}")
        # A kept sequence that is a prefix of this one is redundant now.
        self._entries = [e for e in self._entries if not (len(e) <= len(ids) and common_prefix(e.ids, ids) == len(e))]
        for e in self._entries:
            if len(e) >= len(ids) and common_prefix(e.ids, ids) == len(ids):
                self._entries.remove(e)
                self._entries.append(e)
                return  # already covered by a longer one
        self._entries.append(_Entry(ids, states))
        while self.tokens > self.max_tokens:
            self._entries.pop(0)


@functools.cache
def _roomy_layer() -> type:
    """The cache layer class of :func:`roomy_cache` (defined on first use: transformers is imported late)."""
    from transformers.cache_utils import DynamicLayer

    class RoomyLayer(DynamicLayer):
        """A full-attention layer whose states are views of buffers with room to grow.

        transformers' ``DynamicLayer`` concatenates at every decoding step, copying
        the whole batch's states each time (half of a step's time at batch 8 and
        1,000 tokens on CPU); this one writes the new token's states in place.
        """

        def __init__(self, keys: Any, values: Any, room: int):
            super().__init__()
            self.lazy_initialization(keys, values)
            self._room = max(room, 1)
            self._length = 0
            self._buffers = [self._alloc(t, t.shape[-2] + self._room) for t in (keys, values)]
            self._append(keys, values)

        @staticmethod
        def _alloc(like: Any, length: int) -> Any:
            return like.new_empty((*like.shape[:-2], length, like.shape[-1]))

        def _append(self, keys: Any, values: Any) -> None:
            end = self._length + keys.shape[-2]
            if end > self._buffers[0].shape[-2]:  # out of room: a larger buffer
                grown = [self._alloc(b, end + self._room) for b in self._buffers]
                for new, old in zip(grown, self._buffers):
                    new[..., : self._length, :] = old[..., : self._length, :]
                self._buffers = grown
            for buffer, states in zip(self._buffers, (keys, values)):
                buffer[..., self._length : end, :] = states
            self._length = end
            self.keys, self.values = (b[..., :end, :] for b in self._buffers)

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            self._append(key_states, value_states)
            return self.keys, self.values

    return RoomyLayer


def roomy_cache(config: Any, states: LayerStates, room: int) -> Any:
    """A transformers ``DynamicCache`` holding ``states``, with room for ``room`` more tokens per layer in place."""
    from transformers import DynamicCache

    cache = DynamicCache(config=config)
    layer = _roomy_layer()
    cache.layers = [layer(k, v, room) for k, v in states]
    return cache
