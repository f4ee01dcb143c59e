"""ReFrame site configuration for beff's checks (``reframe -C settings.py``).

One system that matches any host, with two partitions; choose one with ``--system``:

* ``beff-local:local``: ReFrame's local scheduler runs the job script on this host and the
  ``mpiexec`` launcher starts beff (``mpiexec -n <num_tasks> beff ...``), both from PATH;
* ``beff-local:slurm``: sbatch and srun (see the partition's comment for its variables).

Each partition runs one job at a time: two measurements on one node at once would measure
each other.

The performance log (``perflogs/<system>/<partition>/<check>.log`` under the prefix) has a
header line, then one line per check run: fields separated by ``|``, the fixed fields first
and then six fields per performance variable (name, value, unit, reference, lower and upper
threshold).
"""

import os
import shlex

site_configuration = {
    "systems": [
        {
            "name": "beff-local",
            "descr": "beff on this host (mpiexec) or through Slurm (sbatch, srun)",
            "hostnames": [".*"],
            "partitions": [
                {
                    "name": "local",
                    "descr": "this host; beff and mpiexec from PATH",
                    "scheduler": "local",
                    "launcher": "mpiexec",
                    "environs": ["beff"],
                    "max_jobs": 1,
                },
                {
                    # Through Slurm: ReFrame submits the job script with sbatch and srun
                    # starts the ranks; SLURM_MPI_TYPE does what `srun --mpi=pmi2` does, for
                    # MPICH over PMI-2 (Open MPI 5: pmix). A site names its partition and
                    # account in BEFF_RFM_SLURM_ACCESS (e.g. "--partition=compute"); a Slurm
                    # without accounting (no sacct) needs BEFF_RFM_SLURM_SCHEDULER=squeue.
                    # Select it with `reframe --system beff-local:slurm`.
                    "name": "slurm",
                    "descr": "compute nodes through Slurm (sbatch, srun)",
                    "scheduler": os.environ.get("BEFF_RFM_SLURM_SCHEDULER", "slurm"),
                    "launcher": "srun",
                    "access": shlex.split(os.environ.get("BEFF_RFM_SLURM_ACCESS", "")),
                    "environs": ["beff"],
                    "env_vars": [["SLURM_MPI_TYPE", "pmi2"]],
                    "max_jobs": 1,
                },
            ],
        },
    ],
    "environments": [
        {
            # The environment under test: beff and the MPI it runs on. A site loads them
            # here ("modules": [...]) or points PATH at its installation ("env_vars").
            "name": "beff",
        },
    ],
    "logging": [
        {
            "level": "debug",
            "handlers": [
                {"type": "stream", "name": "stdout", "level": "info",
                 "format": "%(message)s"},
                {"type": "file", "name": "reframe.log", "level": "debug",
                 "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s",
                 "append": False},
            ],
            "handlers_perflog": [
                {
                    "type": "filelog",
                    "prefix": "%(check_system)s/%(check_partition)s",
                    "level": "info",
                    "format": ("%(check_job_completion_time)s|reframe %(version)s|"
                               "%(check_display_name)s|%(check_system)s:%(check_partition)s|"
                               "%(check_environ)s|%(check_result)s|%(check_outputdir)s|"
                               "%(check_perfvalues)s"),
                    "format_perfvars": ("%(check_perf_var)s|%(check_perf_value)s|"
                                        "%(check_perf_unit)s|%(check_perf_ref)s|"
                                        "%(check_perf_lower_thres)s|"
                                        "%(check_perf_upper_thres)s|"),
                    "append": True,
                },
            ],
        },
    ],
}
