"""Quality gates: a run's summary checked against declared thresholds (issue 34).

- ``models``: the gate file (YAML, ``gate@1``) and the result of checking a run;
- ``service``: the metrics a check can read, the baselines a ``max_drop`` compares with
  (the corpus's previous run, the policy version's last), and the verdict.

Exit codes follow the data-quality tools CI already gates on: 0 pass, 1 warn, 2 fail.
"""
