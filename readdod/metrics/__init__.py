"""Metrics: what one daemon counts (:mod:`.meter`), how it is told in OpenMetrics text
(:mod:`.exposition`), and the optional HTTP endpoint a scraper reads (:mod:`.http`)."""
