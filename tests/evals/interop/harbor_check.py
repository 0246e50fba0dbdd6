"""Run by the Python >= 3.12 venv that holds harbor (not collected by pytest): each ATIF file given is read
by harbor's `Trajectory` model and by its own validator; prints {file: [errors]} as JSON (empty: valid)."""

import json
import sys

from harbor.models.trajectories import Trajectory
from harbor.utils.trajectory_validator import TrajectoryValidator
from pydantic import ValidationError

found = {}
for path in sys.argv[1:]:
    errors = []
    try:
        with open(path) as f:
            Trajectory.model_validate(json.load(f))
    except ValidationError as e:
        errors.append(str(e))
    validator = TrajectoryValidator()
    if not validator.validate(path):
        errors += validator.get_errors()
    found[path] = errors
print(json.dumps(found))
