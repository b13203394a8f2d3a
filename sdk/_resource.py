"""The resource attributes that name this process as operators know it: host, pid and pod.

OpenTelemetry's SDK gives every process a random ``service.instance.id``; a page that names
only that UUID tells on-call nothing, and after a deploy nobody can say which process it was.
These are OpenTelemetry's semantic-convention names, set beneath what the app's own resource
(``OTEL_RESOURCE_ATTRIBUTES``, a provider of its own) says, never over it.
"""

from __future__ import annotations

import os
import socket

from opentelemetry.sdk.resources import Resource

HOST_NAME = "host.name"
PROCESS_PID = "process.pid"
K8S_POD_NAME = "k8s.pod.name"


def instance_attributes() -> dict[str, str | int]:
    """``host.name``, ``process.pid`` and, in Kubernetes, ``k8s.pod.name``.

    The pod name is ``POD_NAME`` (the downward API's usual variable) wherever it is set, else
    ``HOSTNAME`` inside Kubernetes (``KUBERNETES_SERVICE_HOST`` set), which is the pod's name
    there and anything at all elsewhere.
    """
    attributes: dict[str, str | int] = {PROCESS_PID: os.getpid()}
    try:
        host = socket.gethostname()
    except OSError:
        host = ""
    if host:
        attributes[HOST_NAME] = host
    pod = os.environ.get("POD_NAME") or (
        os.environ.get("HOSTNAME") if os.environ.get("KUBERNETES_SERVICE_HOST") else None
    )
    if pod:
        attributes[K8S_POD_NAME] = pod
    return attributes


def with_instance(resource: Resource) -> Resource:
    """``resource`` with the instance attributes it does not set itself."""
    return Resource(instance_attributes()).merge(resource)
