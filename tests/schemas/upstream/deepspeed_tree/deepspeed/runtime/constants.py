STEPS = """
STEPS is documented in this format: "steps": 1
"""
STEPS = "steps"
CLIPPING = "clipping"
OLD_DTYPE = "comm_dtype"
SECTION = "eigen"
