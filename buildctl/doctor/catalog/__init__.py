"""Data only: the doctor's error catalog, one YAML file per category (loaded by buildctl.doctor.models)."""
