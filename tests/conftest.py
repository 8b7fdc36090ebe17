pytest_plugins = ["buildctl.doctor.pytest_plugin"]
