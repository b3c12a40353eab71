"""The dependency-aware curriculum: the state machine (``core``), a round's training mix (``mix``), drift from the seed tasks (``drift``) and its Neo4j storage (``store``)."""
