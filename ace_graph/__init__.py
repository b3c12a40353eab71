"""ACE's graph side: skill taxonomy, step tagging, the Neo4j store, mining, and the managed server."""
