"""Why it stops scaling (issue 43): evidence runs, the differential, the causes, the USL model."""
