"""Slurm launcher: sbatch script generation (srun or ray.sub mode), job polling, cancel, follower.

Public entry points: ``backend.submit(run_dir, plan, spec) -> job_id``, ``backend.poll(job_id)``,
``backend.cancel_run(run_dir)``, ``backend.follow(run_dir)``, ``backend.start_follower(run_dir)``,
``script.render(run_dir, plan, spec) -> Submission`` (``.preview()`` shows it before submission),
``hostlist.expand(text)``. The follower runs the
steps' logs through ``console.runs.pipeline`` (the local supervisor's), samples each node
(``gpu.NodeSampler``) and reads job states and srun launch failures as ``catalog/slurm.toml`` says.
"""
