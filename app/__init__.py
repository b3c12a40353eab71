"""The Streamlit dashboard (`ace app`): entry script ``Overview.py`` plus the numbered ``pages/``.

Pages are thin: their data come from :mod:`ace_graph.reports` (named queries in
``cypher/``) through the cached helpers in :mod:`app.data`; the app holds no Cypher.
"""

from pathlib import Path

ENTRY = Path(__file__).resolve().parent / "Overview.py"
