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


from .constants import *

LOCAL = "local_flag"


def get_scalar_param(d, key, default):
    return d.get(key, default)


def get_steps(param_dict):
    return get_scalar_param(param_dict, STEPS, 1)


def get_dtype(param_dict, comm_type=OLD_DTYPE):
    return get_scalar_param(param_dict, comm_type, None)


def get_eigen(param_dict):
    if SECTION in param_dict.keys():
        return get_eigen_mode(param_dict[SECTION])
    return None


def get_eigen_mode(param_dict):
    return param_dict.get("mode")  # the section's own dict: not a top-level key


def never_called(param_dict):
    return param_dict.get("orphan")


class DeepSpeedConfig:
    def __init__(self, param_dict):
        self._param_dict = param_dict
        self.steps = get_steps(param_dict)
        self.dtype = get_dtype(param_dict)
        self.eigen = get_eigen(param_dict)
        self.clip = self._param_dict.get(CLIPPING, 0.0)
        self.local = LOCAL in param_dict
