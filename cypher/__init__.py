"""ACE's named Cypher queries and schema steps, one ``.cypher`` file each.

This folder is a package only so the files ship with ACE (package data); code
loads them through ``ace_graph.queries``, which keeps no copies of their text.
"""
