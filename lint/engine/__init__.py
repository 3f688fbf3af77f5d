"""The engine: discovery, per-file configuration, the project (sources, jobs, links), rules registry, suppressions,
the runner (check and fix rounds), file groups and the results cache."""
