// check_template: hostile field types and templates that reach for the operator's volumes or the namespace's
// rendezvous key are refused with a message naming the field, and whatever passes renders without throwing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_jobs.h"
#include "trainingjob/api/parse.h"
#include "trainingjob/api/template_check.h"
#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

json base_template() {
  return json::parse(R"({"metadata": {"labels": {"app": "train"}},
                         "spec": {"containers": [{"name": "trainer", "image": "x", "command": ["python", "t.py"]}]}})");
}

struct Case {
  std::string name;
  std::string pointer;  // JSON pointer into the template to set
  json value;
  std::string message;  // what the error must contain (the field's path, and why)
};

const std::vector<Case>& hostile_cases() {
  static const std::vector<Case> cases = {
      // Types the operator reads: each would have thrown while rendering, or been lost from the cache.
      {"env name a number", "/spec/containers/0/env", json::parse(R"([{"name": 5, "value": "x"}])"),
       "spec.template.spec.containers[0].env[0].name: must be a string, got 5"},
      {"env entry a string", "/spec/containers/0/env", json::parse(R"(["A=1"])"),
       "spec.template.spec.containers[0].env[0]: must be an object, got \"A=1\""},
      {"env value a number", "/spec/containers/0/env", json::parse(R"([{"name": "A", "value": 1}])"),
       "spec.template.spec.containers[0].env[0].value: must be a string, got 1"},
      {"containerPort a string", "/spec/containers/0/ports", json::parse(R"([{"containerPort": "29500"}])"),
       "spec.template.spec.containers[0].ports[0].containerPort: must be an integer, got \"29500\""},
      {"containerPort a fraction", "/spec/containers/0/ports", json::parse(R"([{"containerPort": 80.5}])"),
       "ports[0].containerPort: must be an integer, got 80.5"},
      {"ports an object", "/spec/containers/0/ports", json::parse(R"({"containerPort": 80})"),
       "spec.template.spec.containers[0].ports: must be a list"},
      {"volume name a number", "/spec/volumes", json::parse(R"([{"name": 7, "emptyDir": {}}])"),
       "spec.template.spec.volumes[0].name: must be a string, got 7"},
      {"volume without a name", "/spec/volumes", json::parse(R"([{"emptyDir": {}}])"),
       "spec.template.spec.volumes[0].name: required"},
      {"volumes a map", "/spec/volumes", json::parse(R"({"data": {"emptyDir": {}}})"),
       "spec.template.spec.volumes: must be a list"},
      {"volumeMount name a list", "/spec/containers/0/volumeMounts", json::parse(R"([{"name": ["a"], "mountPath": "/d"}])"),
       "spec.template.spec.containers[0].volumeMounts[0].name: must be a string"},
      {"volumeMounts a string", "/spec/containers/0/volumeMounts", "data:/d",
       "spec.template.spec.containers[0].volumeMounts: must be a list"},
      {"terminationMessagePath a number", "/spec/containers/0/terminationMessagePath", 3,
       "spec.template.spec.containers[0].terminationMessagePath: must be a string, got 3"},
      {"label value a number", "/metadata/labels", json::parse(R"({"tier": 1})"),
       "spec.template.metadata.labels.tier: must be a string, got 1"},
      {"labels a list", "/metadata/labels", json::parse(R"(["a"])"),
       "spec.template.metadata.labels: must be an object"},
      {"annotations a string", "/metadata/annotations", "a=b",
       "spec.template.metadata.annotations: must be an object"},
      {"init container name a number", "/spec/initContainers", json::parse(R"([{"name": 1, "image": "x"}])"),
       "spec.template.spec.initContainers[0].name: must be a string, got 1"},
      {"initContainers a string", "/spec/initContainers", "setup",
       "spec.template.spec.initContainers: must be a list"},
      // The namespace's rendezvous key and the operator's volumes stay out of the job author's reach.
      {"a volume of Secret kubedist-rendezvous", "/spec/volumes",
       json::parse(R"([{"name": "key", "secret": {"secretName": "kubedist-rendezvous"}}])"),
       "spec.template.spec.volumes[0].secret.secretName: the template may not use Secret kubedist-rendezvous"},
      {"a projected source of Secret kubedist-rendezvous", "/spec/volumes",
       json::parse(R"([{"name": "key", "projected": {"sources": [{"configMap": {"name": "c"}},
                                                                    {"secret": {"name": "kubedist-rendezvous"}}]}}])"),
       "spec.template.spec.volumes[0].projected.sources[1].secret.name: the template may not use Secret "
       "kubedist-rendezvous"},
      {"an env var from Secret kubedist-rendezvous", "/spec/containers/0/env",
       json::parse(R"([{"name": "K", "valueFrom": {"secretKeyRef": {"name": "kubedist-rendezvous", "key": "secret"}}}])"),
       "spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.name: the template may not use Secret "
       "kubedist-rendezvous"},
      {"envFrom Secret kubedist-rendezvous", "/spec/containers/0/envFrom",
       json::parse(R"([{"secretRef": {"name": "kubedist-rendezvous"}}])"),
       "spec.template.spec.containers[0].envFrom[0].secretRef.name: the template may not use Secret"},
      {"an init container's env from Secret kubedist-rendezvous", "/spec/initContainers",
       json::parse(R"([{"name": "peek", "image": "x", "env": [{"name": "K", "valueFrom": {"secretKeyRef":
                      {"name": "kubedist-rendezvous", "key": "secret"}}}]}])"),
       "spec.template.spec.initContainers[0].env[0].valueFrom.secretKeyRef.name"},
      {"the trainer mounts the operator's volume kubedist-rendezvous", "/spec/containers/0/volumeMounts",
       json::parse(R"([{"name": "kubedist-rendezvous", "mountPath": "/key"}])"),
       "spec.template.spec.containers[0].volumeMounts[0].name: volume \"kubedist-rendezvous\" is the operator's"},
      {"an init container mounts kubedist-rendezvous", "/spec/initContainers",
       json::parse(R"([{"name": "peek", "image": "x", "volumeMounts": [{"name": "kubedist-rendezvous",
                                                                       "mountPath": "/key"}]}])"),
       "spec.template.spec.initContainers[0].volumeMounts[0].name: volume \"kubedist-rendezvous\""},
      {"a volume named kubedist-rendezvous", "/spec/volumes",
       json::parse(R"([{"name": "kubedist-rendezvous", "emptyDir": {}}])"),
       "spec.template.spec.volumes[0].name: \"kubedist-rendezvous\" is reserved for the operator's volumes"},
      {"a volume named kubedist-rdzv", "/spec/volumes", json::parse(R"([{"name": "kubedist-rdzv", "emptyDir": {}}])"),
       "\"kubedist-rdzv\" is reserved"},
      {"a volume named kubedist-podinfo", "/spec/volumes",
       json::parse(R"([{"name": "kubedist-podinfo", "emptyDir": {}}])"), "\"kubedist-podinfo\" is reserved"},
      {"a mount inside /kubedist/podinfo", "/spec/containers/0/volumeMounts",
       json::parse(R"([{"name": "data", "mountPath": "/kubedist/podinfo/domain"}])"),
       "\"/kubedist/podinfo/domain\" lies under /kubedist/podinfo"},
      {"a mount at /kubedist/bin", "/spec/containers/0/volumeMounts",
       json::parse(R"([{"name": "data", "mountPath": "/kubedist/bin"}])"),
       "spec.template.spec.containers[0].volumeMounts[0].mountPath: \"/kubedist/bin\" lies under /kubedist/bin"},
      {"a mount inside /kubedist/rendezvous", "/spec/containers/0/volumeMounts",
       json::parse(R"([{"name": "data", "mountPath": "/kubedist/rendezvous/key"}])"),
       "\"/kubedist/rendezvous/key\" lies under /kubedist/rendezvous"},
      {"a container named kubedist-launcher", "/spec/containers/0/name", "kubedist-launcher",
       "spec.template.spec.containers[0].name: \"kubedist-launcher\" is the name of the operator's init container"},
  };
  return cases;
}

json with(const Case& c) {
  json tmpl = base_template();
  tmpl[json::json_pointer(c.pointer)] = c.value;
  return tmpl;
}

TEST(CheckTemplate, RefusesEachHostileTemplateNamingTheField) {
  for (const auto& c : hostile_cases()) {
    const auto r = check_template(with(c));
    ASSERT_FALSE(r.ok()) << c.name << ": accepted";
    EXPECT_NE(r.error().message.find(c.message), std::string::npos)
        << c.name << ": got \"" << r.error().message << "\", want it to contain \"" << c.message << "\"";
  }
}

// Through the parser: the job keeps its name in the cache and its spec_error says why (InvalidSpec, once).
TEST(CheckTemplate, AHostileTemplateIsASpecErrorOfTheJobNeverAThrow) {
  for (const auto& c : hostile_cases()) {
    json j = testing::example_job_json();
    j["spec"]["template"] = with(c);
    Result<TrainingJob> job = Error::invalid("not parsed");
    ASSERT_NO_THROW(job = parse_training_job(j)) << c.name;
    ASSERT_TRUE(job.ok()) << c.name;
    EXPECT_EQ(job->name, "resnet");
    EXPECT_NE(job->spec_error.find(c.message), std::string::npos) << c.name << ": " << job->spec_error;
  }
}

// What the operator reads may still vary in every way Kubernetes allows; such templates render.
TEST(CheckTemplate, TemplatesKubernetesAllowsRenderWithoutThrowing) {
  const std::vector<std::string> fine = {
      R"({"spec": {"containers": [{"name": "trainer", "command": ["a"], "env": [{"name": "P",
            "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}, {"name": "S", "valueFrom": {"secretKeyRef":
            {"name": "wandb", "key": "token"}}}], "envFrom": [{"configMapRef": {"name": "c"}}, {"secretRef":
            {"name": "s"}}], "ports": [{"name": "tb", "containerPort": 6006}, {"containerPort": 29500}],
            "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "s", "mountPath": "/kubedistx"},
                             {"name": "data", "mountPath": "/kubedist/workdir"}]}],
          "volumes": [{"name": "data", "emptyDir": {}}, {"name": "s", "secret": {"secretName": "wandb"}},
                      {"name": "p", "projected": {"sources": [{"secret": {"name": "other"}}]}}],
          "initContainers": [{"name": "fetch", "image": "x"}]}})",
      R"({"metadata": {"labels": null, "annotations": {"a": "b"}},
          "spec": {"containers": [{"name": "main", "command": ["a"], "env": null, "ports": null,
                                   "volumeMounts": null}], "volumes": null, "initContainers": null}})",
  };
  for (const auto& text : fine) {
    const json tmpl = json::parse(text);
    ASSERT_TRUE(check_template(tmpl).ok()) << text << ": " << check_template(tmpl).error().message;
    json j = testing::example_job_json();
    j["spec"]["template"] = tmpl;
    const TrainingJob job = testing::job_from(j);
    ASSERT_EQ(job.spec_error, "") << text;
    PodOptions options;
    options.rdzv_secret = true;
    EXPECT_NO_THROW(render_pod(job, 1, options)) << text;
  }
}

}  // namespace
}  // namespace kubedist::trainingjob
