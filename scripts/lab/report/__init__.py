"""The reading side of the lab: one model of a run's numbers (model.py) and its renderers
(markdown.py, html_page.py with svg.py). report.py and compare.py are the entry points."""
