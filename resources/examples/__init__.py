"""Example scripts against the simulator's runtime API, one per built-in workload.

Each is a plain script a user can copy: ``accelview profile resources/examples/llm.py -o run.h5``
runs it under capture; ``accelview profile --workload llm`` runs the same ``run`` function with
``--param KEY=VALUE`` overrides of its keyword arguments.
"""
