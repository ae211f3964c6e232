#include "trainingjob/api/template_check.h"

#include <functional>
#include <optional>
#include <string>

#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;
using Check = std::optional<Error>;  // what is wrong, or nothing

std::string show(const json& v) {
  std::string s = v.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

Error wrong(const std::string& field, const std::string& what, const json& got) {
  return Error::invalid(field + ": " + what + ", got " + show(got));
}

bool absent(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null();
}

// obj[key] must be a string (or absent, unless required).
Check string_field(const json& obj, const char* key, const std::string& where, bool required = false) {
  if (absent(obj, key)) {
    return required ? std::optional(Error::invalid(where + "." + key + ": required")) : std::nullopt;
  }
  if (!obj.at(key).is_string()) return wrong(where + "." + key, "must be a string", obj.at(key));
  return std::nullopt;
}

// obj[key] must be an object (or absent); each() checks it.
Check object_field(const json& obj, const char* key, const std::string& where,
                   const std::function<Check(const json&, const std::string&)>& each = nullptr) {
  if (absent(obj, key)) return std::nullopt;
  const json& v = obj.at(key);
  const std::string field = where + "." + key;
  if (!v.is_object()) return wrong(field, "must be an object", v);
  return each ? each(v, field) : std::nullopt;
}

// obj[key] must be a list of objects (or absent); each() checks every element, named field[i].
Check list_field(const json& obj, const char* key, const std::string& where,
                 const std::function<Check(const json&, const std::string&)>& each) {
  if (absent(obj, key)) return std::nullopt;
  const json& v = obj.at(key);
  const std::string field = where + "." + key;
  if (!v.is_array()) return wrong(field, "must be a list", v);
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string item = field + "[" + std::to_string(i) + "]";
    if (!v[i].is_object()) return wrong(item, "must be an object", v[i]);
    if (auto e = each(v[i], item)) return e;
  }
  return std::nullopt;
}

// A map whose values must all be strings (labels, annotations).
Check string_map(const json& obj, const char* key, const std::string& where) {
  return object_field(obj, key, where, [](const json& m, const std::string& field) -> Check {
    for (const auto& [k, v] : m.items()) {
      if (!v.is_string()) return wrong(field + "." + k, "must be a string", v);
    }
    return std::nullopt;
  });
}

bool reserved_volume(const std::string& name) {
  for (const char* r : kReservedVolumes) {
    if (name == r) return true;
  }
  return false;
}

// A reference to a Secret by name (secretKeyRef, secretRef, a projected source's secret): not the namespace's key.
Check not_the_rendezvous_secret(const json& ref, const std::string& where, const char* key = "name") {
  if (auto e = string_field(ref, key, where)) return e;
  if (!absent(ref, key) && ref.at(key) == kNamespaceRdzvSecret) {
    return Error::invalid(where + "." + key + ": the template may not use Secret " + kNamespaceRdzvSecret +
                          ": it holds the namespace's rendezvous key, from which every job's secret is derived, and "
                          "only the operator's launcher init container reads it");
  }
  return std::nullopt;
}

Check check_env(const json& env, const std::string& where) {
  if (auto e = string_field(env, "name", where, true)) return e;
  if (auto e = string_field(env, "value", where)) return e;
  return object_field(env, "valueFrom", where, [](const json& from, const std::string& field) {
    return object_field(from, "secretKeyRef", field, [](const json& ref, const std::string& f) {
      return not_the_rendezvous_secret(ref, f);
    });
  });
}

Check check_mount(const json& mount, const std::string& where) {
  if (auto e = string_field(mount, "name", where, true)) return e;
  if (auto e = string_field(mount, "mountPath", where, true)) return e;
  const std::string name = mount.at("name").get<std::string>();
  if (reserved_volume(name)) {
    return Error::invalid(where + ".name: volume \"" + name +
                          "\" is the operator's (kubedist-bin, kubedist-rendezvous, kubedist-rdzv and kubedist-podinfo "
                          "hold the launcher, the rendezvous key and the node's topology domain): a container of the "
                          "template may not mount it");
  }
  const std::string path = mount.at("mountPath").get<std::string>();
  for (const std::string dir : kReservedMountDirs) {
    if (path == dir || path.rfind(dir + "/", 0) == 0) {
      return Error::invalid(where + ".mountPath: \"" + path + "\" lies under " + dir +
                            ", where the operator mounts the launcher, the rendezvous key or the node's topology "
                            "domain");
    }
  }
  return std::nullopt;
}

Check check_container(const json& c, const std::string& where) {
  if (auto e = string_field(c, "name", where, true)) return e;
  if (c.at("name") == kLauncherContainer) {
    return Error::invalid(where + ".name: \"" + std::string(kLauncherContainer) +
                          "\" is the name of the operator's init container");
  }
  if (auto e = string_field(c, "terminationMessagePath", where)) return e;
  if (auto e = list_field(c, "env", where, check_env)) return e;
  if (auto e = list_field(c, "envFrom", where, [](const json& from, const std::string& field) {
        return object_field(from, "secretRef", field, [](const json& ref, const std::string& f) {
          return not_the_rendezvous_secret(ref, f);
        });
      })) {
    return e;
  }
  if (auto e = list_field(c, "ports", where, [](const json& port, const std::string& field) -> Check {
        if (auto e = string_field(port, "name", field)) return e;
        if (!absent(port, "containerPort") && !port.at("containerPort").is_number_integer()) {
          return wrong(field + ".containerPort", "must be an integer", port.at("containerPort"));
        }
        return std::nullopt;
      })) {
    return e;
  }
  return list_field(c, "volumeMounts", where, check_mount);
}

Check check_volume(const json& v, const std::string& where) {
  if (auto e = string_field(v, "name", where, true)) return e;
  const std::string name = v.at("name").get<std::string>();
  if (reserved_volume(name)) {
    return Error::invalid(where + ".name: \"" + name + "\" is reserved for the operator's volumes (" +
                          "kubedist-bin, kubedist-rendezvous, kubedist-rdzv, kubedist-podinfo)");
  }
  if (auto e = object_field(v, "secret", where, [](const json& secret, const std::string& field) {
        return not_the_rendezvous_secret(secret, field, "secretName");
      })) {
    return e;
  }
  return object_field(v, "projected", where, [](const json& projected, const std::string& field) {
    return list_field(projected, "sources", field, [](const json& source, const std::string& f) {
      return object_field(source, "secret", f, [](const json& secret, const std::string& s) {
        return not_the_rendezvous_secret(secret, s);
      });
    });
  });
}

}  // namespace

Result<void> check_template(const json& tmpl) {
  const std::string where = "spec.template";
  if (!tmpl.is_object()) return wrong(where, "must be a pod template object", tmpl);
  if (auto e = object_field(tmpl, "metadata", where, [](const json& md, const std::string& field) -> Check {
        if (auto e = string_map(md, "labels", field)) return e;
        return string_map(md, "annotations", field);
      })) {
    return *e;
  }
  if (absent(tmpl, "spec")) return Error::invalid(where + ".spec: required");
  auto e = object_field(tmpl, "spec", where, [](const json& spec, const std::string& field) -> Check {
    if (auto e = list_field(spec, "containers", field, check_container)) return e;
    if (auto e = list_field(spec, "initContainers", field, check_container)) return e;
    return list_field(spec, "volumes", field, check_volume);
  });
  if (e) return *e;
  return {};
}

}  // namespace kubedist::trainingjob
