"""The old place of :mod:`ace_env.bfcl.official` (BFCL's official checker), kept while benchmarks/ and
tests/unit/test_export.py import it from here."""

from ace_env.bfcl.official import official_check, official_check_entry

__all__ = ["official_check", "official_check_entry"]
