"""ACE's composition root: the ``ace`` command line and the demo, where every stage meets.

Nothing imports ``ace``; it imports every other package.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ace")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
