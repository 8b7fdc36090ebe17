"""The serve images' entrypoint: preflight, arch-aware launch defaults, health, shutdown.

    docker run -p 30000:30000 rocmig/serve                       the bundled tiny model
    docker run ... rocmig/serve --model-path /models/x --tp 8    SGLang's own flags pass through

Modules: cell (the image's cell facts), kfd (GPUs from the KFD topology in /sys), preflight (one
check per failure, each with its exit code), launch (the engine command line and environment, each
default with its reason), supervise (start, health, signals), bundled (the model made at build time).
Exit codes: recipes.serve.errors.
"""
