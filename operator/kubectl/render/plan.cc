#include "kubectl/render/plan.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "kubectl/render/shipment.h"
#include "kubectl/render/workdir.h"

namespace kubedist::kubectl {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_local(const std::string& cwd, const std::string& path) {
  std::ifstream in(fs::path(cwd) / path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string random_suffix() {
  static const char* alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;
  std::string s;
  for (int i = 0; i < 5; ++i) s += alphabet[rd() % 36];
  return s;
}

}  // namespace

std::string default_job_name(const std::string& program, const std::string& suffix) {
  std::string stem = fs::path(program).filename().string();
  for (const char* ext : {".py", ".sh"}) {
    if (stem.size() > 3 && stem.substr(stem.size() - 3) == ext) stem.resize(stem.size() - 3);
  }
  if (const auto dot = stem.rfind('.'); dot != std::string::npos) stem = stem.substr(dot + 1);  // pkg.train
  std::string out;
  for (char c : stem) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9');
    if (ok) out += l;
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.empty() || !(out[0] >= 'a' && out[0] <= 'z')) out = "job" + (out.empty() ? "" : "-" + out);
  if (out.size() > 40) out.resize(40);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out + "-" + suffix;
}

Result<RunPlan> plan_run(const RunOptions& o, const std::string& cwd, const std::string& ns) {
  RunPlan plan;
  auto cmd = parse_training_command(o.command, [&](const std::string& p) { return read_local(cwd, p); });
  if (!cmd) return cmd.error();
  plan.notes = cmd->notes;

  std::string program = cmd->program;
  std::string workdir;
  if (!o.no_workdir) {
    if (cmd->module) {
      workdir = o.workdir.empty() ? cwd : (fs::path(cwd) / o.workdir).lexically_normal().string();
    } else {
      const fs::path local = (fs::path(cwd) / cmd->program).lexically_normal();
      std::error_code ec;
      if (!fs::is_regular_file(local, ec)) {
        if (!o.image.empty() && o.workdir.empty()) {  // the script is in the image
          plan.notes.push_back(cmd->program + " is not here: the pods run it from image " + o.image + "'s own files");
        } else {
          return Error::invalid(cmd->program + ": no such file in " + cwd + "; run from the directory that holds it, "
                                "pass --workdir DIR, or --image IMAGE for a script inside an image");
        }
      } else {
        workdir = o.workdir.empty() ? local.parent_path().string()
                                    : (fs::path(cwd) / o.workdir).lexically_normal().string();
        const fs::path rel = local.lexically_relative(workdir);
        if (rel.empty() || rel.begin()->string() == "..") {
          return Error::invalid(cmd->program + " is outside the working directory " + workdir +
                                ": pass a --workdir that holds it");
        }
        program = rel.string();
        if (cmd->no_python && program.find('/') == std::string::npos) program = "./" + program;
      }
    }
  }
  std::vector<std::string> chunks;
  if (!workdir.empty()) {
    auto archive = archive_workdir(workdir);
    if (!archive) return archive.error();
    chunks = split_chunks(archive->tar);
    plan.workdir = workdir;
    plan.files = archive->files;
    plan.bytes = archive->tar.size();
    plan.shipment = describe_shipment(*archive, workdir);
  }

  JobInputs& in = plan.inputs;
  in.name = o.name.empty() ? default_job_name(cmd->program, random_suffix()) : o.name;
  if (auto r = check_job_name(in.name, cmd->max_nodes); !r) return r.error();
  in.ns = ns;
  const char* env_image = std::getenv("KUBEDIST_IMAGE");
  in.image = !o.image.empty() ? o.image : (env_image && *env_image ? env_image : kDefaultImage);
  in.options = o;
  in.command = *cmd;
  in.program = program;
  in.chunks = std::move(chunks);
  auto rendered = render_job(in);
  if (!rendered) return rendered.error();
  plan.rendered = std::move(*rendered);
  for (const auto& n : plan.rendered.notes) plan.notes.push_back(n);
  return plan;
}

}  // namespace kubedist::kubectl
