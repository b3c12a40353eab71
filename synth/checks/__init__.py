"""Task checks by concern: what every check reads (:mod:`.parts`), value provenance (:mod:`.values`) and the
text rules (:mod:`.text`).  The checks that belong to one strategy live beside it and are declared with it in
the registry (:mod:`synth.registry`); :func:`synth.taskcheck.check_task` runs the generic ones and then the
task's strategy's declared ones."""
