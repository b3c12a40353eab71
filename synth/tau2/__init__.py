"""τ² synthesis: strategies aimed at frontier compositions of τ² tools (:mod:`synth.tau2.strategies`) and the
pipeline that turns them into τ² tasks verified by ACE's oracle and τ²'s own evaluator
(:mod:`synth.tau2.pipeline`)."""
