"""The scheduled sweep (``run``) and its steps: member places, running trials, warm pools."""
