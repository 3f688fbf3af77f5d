class DeepSpeedConfigError(Exception):
    pass


_ISSUE = "https://example.invalid/issues/1"
_REMOVED_TOP_LEVEL_CONFIG_KEYS = {
    "amp": f"AMP has been removed. See {_ISSUE}.",
    "nebula": "Nebula has been removed.",
}
_REMOVED_ZERO_CONFIG_KEYS = {
    "mics_shard_size": "MiCS has been removed.",
}
_REMOVED_BUT_NOT_CHECKED = {"never_read": "not refused by the reject function"}


def _reject_removed_config_keys(param_dict):
    for key, message in _REMOVED_TOP_LEVEL_CONFIG_KEYS.items():
        if key in param_dict:
            raise DeepSpeedConfigError(message)
    zero_config = param_dict.get("zero_optimization")
    if isinstance(zero_config, dict):
        for key, message in _REMOVED_ZERO_CONFIG_KEYS.items():
            if key in zero_config:
                raise DeepSpeedConfigError(message)
