"""Why a program stops scaling (issue 43): evidence runs (collect, fold, evidence), the differential and
the named causes (diff, classify, verdict, flame) and the Universal Scalability Law (usl).
The evidence files' format is docs-owned by /work/notes/why-format.md and code-owned by evidence.py."""
