"""The master's own routes: liveness (no token), what it is and runs, and shutdown."""

from __future__ import annotations

import os
import sys
import time

from fastapi import APIRouter

from ... import __version__
from ...rest import Health, MasterInfo, Ok, PoolInfo, routes
from ._services import AUTH, Svc

router = APIRouter()


@router.get(routes.HEALTH)
def health() -> Health:
    return Health(status="ok")


@router.get(routes.MASTER, dependencies=AUTH)
def master_info(services: Svc) -> MasterInfo:
    engine = services.engine
    return MasterInfo(
        version=__version__,
        slots=engine.settings.slots,
        gpus=engine.settings.gpus,
        home=str(engine.settings.home),
        python=sys.executable,
        pid=os.getpid(),
        uptime_seconds=round(time.time() - services.started, 1),
        running_trials=engine.running_trial_ids(),
        idle_timeout_seconds=services.idle_timeout,
        pools=[PoolInfo(**pool) for pool in engine.pool_infos()],
    )


@router.post(routes.SHUTDOWN, dependencies=AUTH)
def shutdown(services: Svc) -> Ok:
    services.stopping.set()
    if services.on_shutdown is not None:
        services.on_shutdown()
    return Ok(status="stopping")
