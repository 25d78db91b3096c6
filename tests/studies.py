"""A numerics study as the `numerics` command runs it: the job, then its rendering."""

from bench.numerics import job as study_job
from bench.numerics.render import study


def _then_render(job):
    def run(*args, **kwargs):
        folder = job(*args, **kwargs)
        study.render(folder)
        return folder

    return run


start_study, resume_study = _then_render(study_job.start), _then_render(study_job.resume)
