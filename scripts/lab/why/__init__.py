"""Why a program stops scaling (issue 43): evidence runs (collect, fold, evidence), the differential and
the named causes (diff, classify, verdict, flame) and the Universal Scalability Law (usl).
The evidence files' format is described in docs/design.md and owned in code by evidence.py."""
