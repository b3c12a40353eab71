"""The dependency-aware curriculum: the state machine (``core``) and its Neo4j storage (``store``)."""
