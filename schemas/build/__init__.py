"""Builders that derive the knowledge tables of schemas/ from their inputs. Each is run as a module and rewrites
its tables in place, e.g. `python -m rlhf_lint.schemas.build.ds_config`."""
