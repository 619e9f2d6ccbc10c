"""Slurm launcher: sbatch script generation (srun or ray.sub mode), job polling, cancel, follower.

Entry points: ``backend.submit``, ``backend.poll``, ``backend.cancel_run``, ``backend.follow``,
``backend.start_follower``, ``script.render`` (``Submission.preview()`` before submitting).
"""
