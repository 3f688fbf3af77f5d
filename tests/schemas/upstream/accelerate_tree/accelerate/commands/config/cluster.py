def get_cluster_input():
    deepspeed_config = {}
    deepspeed_config["zero_stage"] = 2
    deepspeed_config["offload_optimizer_device"] = "none"
    if deepspeed_config["zero_stage"] == 3:
        deepspeed_config["zero3_init_flag"] = True
    other = {"not_a_plugin_key": 1}
    return deepspeed_config, other
