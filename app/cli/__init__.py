"""The ``accelview`` command: argument parsing and text output; Qt only inside the commands that draw."""
