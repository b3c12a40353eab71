"""ACE's environment layer: BFCL tasks, call parsing, the safe executor, the
executed oracle and the verifier, rollout formats, and the simulated agent.

The bottom layer: it imports nothing else of ACE.
"""
