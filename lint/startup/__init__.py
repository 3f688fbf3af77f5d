"""Start-up speed measures, each kept only where bench/latency.py shows it pays: record classes without
dataclasses, regular expressions compiled on first use, interpreter settings while starting."""
