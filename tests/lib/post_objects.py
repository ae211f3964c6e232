"""POSTs many large objects to the API server of $KUBECONFIG over one kept-alive connection, with the kubeconfig's
client certificate (kubectl would parse them, and later list them, whole). For the tests that fill a namespace with
tenants' objects: tests/integration/operator/scenarios/*_memory*.sh.

usage: post_objects.py NAMESPACE KIND COUNT SIZE
  KIND secret: Secrets tenant-I, labelled as the operator's namespace Secret, with SIZE random bytes of data
  KIND pod:    Pending pods tenant-I, labelled as a job's pods, whose container has an environment value of SIZE bytes
  KIND job:    suspended TrainingJobs tenant-I whose template has an environment value of SIZE bytes
"""
import base64
import http.client
import json
import os
import ssl
import sys
import tempfile

import yaml


def objects(kind, count, size):
    blob = base64.b64encode(os.urandom(size * 3 // 4 + 3)).decode()[:size]  # SIZE characters
    secret_data = base64.b64encode(os.urandom(size)).decode() if kind == "secret" else ""
    for i in range(count):
        name = f"tenant-{i}"
        if kind == "secret":
            yield "api/v1", "secrets", {
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": name, "labels": {"kubedist.io/job-name": f"j{i}",
                                                      "kubedist.io/rendezvous-secret": "namespace"}},
                "data": {"secret": secret_data}}
        elif kind == "pod":
            yield "api/v1", "pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "labels": {"kubedist.io/job-name": f"tenant-{i // 2}",
                                                      "kubedist.io/node-rank": str(i % 2)}},
                "spec": {"nodeSelector": {"kubedist.io/no-such-pool": "none"},  # Pending for good
                         "containers": [{"name": "trainer", "image": "busybox",
                                         "env": [{"name": "BLOB", "value": blob}]}]}}
        elif kind == "job":
            yield "apis/kubedist.io/v1alpha1", "trainingjobs", {
                "apiVersion": "kubedist.io/v1alpha1", "kind": "TrainingJob", "metadata": {"name": name},
                "spec": {"replicas": 2, "suspend": True, "template": {"spec": {"containers": [{
                    "name": "trainer", "image": "busybox", "command": ["python", "train.py"],
                    "env": [{"name": "BLOB", "value": blob}]}]}}}}
        else:
            sys.exit(f"post_objects.py: unknown kind {kind}")


def main():
    ns, kind, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    cfg = yaml.safe_load(open(os.environ["KUBECONFIG"]))
    cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for key in ("certificate-authority-data", "client-certificate-data", "client-key-data"):
            files[key] = os.path.join(tmp, key)
            with open(files[key], "wb") as f:
                f.write(base64.b64decode(cluster.get(key) or user[key]))
        ctx = ssl.create_default_context(cafile=files["certificate-authority-data"])
        ctx.load_cert_chain(files["client-certificate-data"], files["client-key-data"])
        conn = http.client.HTTPSConnection(cluster["server"].removeprefix("https://"), context=ctx)
        for group, plural, obj in objects(kind, count, size):
            conn.request("POST", f"/{group}/namespaces/{ns}/{plural}", json.dumps(obj),
                         {"Content-Type": "application/json"})
            r = conn.getresponse()
            text = r.read()
            if r.status != 201:
                sys.exit(f"{plural} {obj['metadata']['name']}: HTTP {r.status}: {text[:300]!r}")


if __name__ == "__main__":
    main()
