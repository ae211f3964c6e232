// The TrainingJob and ConfigMaps the plugin makes, the ignore rules and the archive of the working directory.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <yaml-cpp/yaml.h>

#include "kubectl/render/plan.h"
#include "kubectl/render/ignore.h"
#include "kubectl/render/job.h"
#include "kubectl/render/workdir.h"
#include "trainingjob/api/parse_spec.h"
#include "trainingjob/api/template_check.h"

namespace kubedist::kubectl {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

JobInputs inputs(std::vector<std::string> command, RunOptions o = {}) {
  o.command = command;
  auto cmd = parse_training_command(command, [](const std::string&) { return std::nullopt; });
  EXPECT_TRUE(cmd.ok()) << cmd.error().message;
  JobInputs in;
  in.name = "train-abcde";
  in.ns = "team";
  in.image = "img:1";
  in.options = o;
  in.command = *cmd;
  in.program = cmd->program;
  return in;
}

json env_of(const json& container) {
  json out = json::object();
  for (const auto& e : container["env"]) out[e["name"].get<std::string>()] = e["value"];
  return out;
}

TEST(RenderJob, TorchrunBecomesReplicasProcessesAndTheWorkersCommand) {
  auto r = render_job(inputs({"torchrun", "--nnodes=2", "--nproc_per_node=4", "--max-restarts=2", "train.py", "-x"}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const json& spec = r->job["spec"];
  EXPECT_EQ(r->job["kind"], "TrainingJob");
  EXPECT_EQ(r->job["metadata"]["namespace"], "team");
  EXPECT_EQ(spec["replicas"], 2);
  EXPECT_FALSE(spec.contains("minReplicas"));
  EXPECT_EQ(spec["nprocPerNode"], 4);
  EXPECT_EQ(spec["maxRestarts"], 2);
  EXPECT_FALSE(spec.contains("restartPolicy"));  // restarts in place, then pods recreated (OnFailure)
  const json& trainer = spec["template"]["spec"]["containers"][0];
  EXPECT_EQ(trainer["name"], "trainer");
  EXPECT_EQ(trainer["image"], "img:1");
  EXPECT_EQ(trainer["command"], json({"python3", "-u", "train.py", "-x"}));
  EXPECT_EQ(env_of(trainer)["PET_TEE"], "3");  // [rank N] prefixes in the logs
  EXPECT_TRUE(r->config_maps.empty());
  EXPECT_FALSE(spec["template"]["spec"].contains("initContainers"));
  // The operator's own spec rules accept it.
  EXPECT_TRUE(trainingjob::parse_spec(spec, "train-abcde").ok());
}

TEST(RenderJob, ElasticRangeAndTorchrunDefaults) {
  auto r = render_job(inputs({"torchrun", "--nnodes=1:2", "train.py"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->job["spec"]["replicas"], 2);
  EXPECT_EQ(r->job["spec"]["minReplicas"], 1);
  EXPECT_EQ(r->job["spec"]["maxReplicas"], 2);
  EXPECT_EQ(r->job["spec"]["nprocPerNode"], 1);  // torchrun's default
  EXPECT_EQ(r->job["spec"]["maxRestarts"], 0);   // torchrun's default
  EXPECT_EQ(r->job["spec"]["restartPolicy"], "ExitCode");  // so a failing program ends the job, as torchrun would
  auto gpu = render_job(inputs({"torchrun", "--nproc-per-node=gpu", "train.py"}));
  EXPECT_EQ(gpu->job["spec"]["nprocPerNode"], "gpu");
}

TEST(RenderJob, LegacyLaunchTravelsAsLauncherVariables) {
  auto r = render_job(inputs({"python", "-m", "torch.distributed.launch", "--nproc_per_node=2", "--use_env", "t.py"}));
  ASSERT_TRUE(r.ok());
  json env = env_of(r->job["spec"]["template"]["spec"]["containers"][0]);
  EXPECT_EQ(env["PET_LEGACY_LAUNCH"], "1");
  EXPECT_EQ(env["PET_USE_ENV"], "1");
  EXPECT_EQ(r->job["spec"]["nprocPerNode"], 2);
}

// torch.distributed.launch without --use_env passes the local rank after the script. The plugin leaves its spelling
// to the launcher's --local-rank-style=auto (the torch in the image: --local_rank under 1.x, --local-rank from 2.0),
// which finds the interpreter and the script in the trainer's command.
TEST(RenderJob, LegacyLaunchLeavesTheLocalRankSpellingToTheTorchInTheImage) {
  auto r = render_job(inputs({"python", "-m", "torch.distributed.launch", "--nproc_per_node=2", "t.py", "--lr=1"}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const json& trainer = r->job["spec"]["template"]["spec"]["containers"][0];
  json env = env_of(trainer);
  EXPECT_EQ(env["PET_LEGACY_LAUNCH"], "1");
  EXPECT_FALSE(env.contains("PET_USE_ENV"));
  EXPECT_FALSE(env.contains("PET_LOCAL_RANK_STYLE"));
  EXPECT_FALSE(env.contains("KUBEDIST_LOCAL_RANK_STYLE"));
  EXPECT_EQ(trainer["command"], json({"python3", "-u", "t.py", "--lr=1"}));
  // A user who knows better says so, as they would to the launcher.
  RunOptions o;
  o.env = {{"PET_LOCAL_RANK_STYLE", "underscore"}};
  auto forced = render_job(inputs({"python", "-m", "torch.distributed.launch", "t.py"}, o));
  ASSERT_TRUE(forced.ok()) << forced.error().message;
  EXPECT_EQ(env_of(forced->job["spec"]["template"]["spec"]["containers"][0])["PET_LOCAL_RANK_STYLE"], "underscore");
}

TEST(RenderJob, OptionsBecomeResourcesQueueGangNodeSelectorAndEnvironment) {
  RunOptions o;
  o.gpus_per_node = 8;
  o.node_selector = {{"kubernetes.io/hostname", "node-a"}, {"pool", "gpu"}};
  o.cpu = "4";
  o.memory = "16Gi";
  o.queue = "team-a";
  o.gang = true;
  o.env = {{"NCCL_DEBUG", "INFO"}, {"MASTER_ADDR", "x"}};
  auto r = render_job(inputs({"torchrun", "--tee=1", "train.py"}, o));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const json& trainer = r->job["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(trainer["resources"]["limits"]["nvidia.com/gpu"], 8);
  EXPECT_EQ(trainer["resources"]["requests"]["cpu"], "4");
  EXPECT_EQ(trainer["resources"]["limits"]["memory"], "16Gi");
  EXPECT_EQ(r->job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "team-a");
  EXPECT_EQ(r->job["spec"]["scheduling"]["gang"], true);
  EXPECT_EQ(r->job["spec"]["template"]["spec"]["nodeSelector"],
            (json{{"kubernetes.io/hostname", "node-a"}, {"pool", "gpu"}}));
  json env = env_of(trainer);
  EXPECT_EQ(env["NCCL_DEBUG"], "INFO");
  EXPECT_FALSE(env.contains("MASTER_ADDR"));
  EXPECT_EQ(env["PET_TEE"], "1");  // the user's --tee, not ours
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("MASTER_ADDR"), std::string::npos);
  o.env = {{"NNODES", "3"}};
  auto refused = render_job(inputs({"torchrun", "train.py"}, o));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("-e NNODES"), std::string::npos);
}

TEST(RenderJob, SparesAndTheTopologyKeyGoToTheSpecAndAOneNodeJobIsRefusedSparesAtOnce) {
  RunOptions o;
  o.spares = 2;
  o.topology_key = "topology.kubernetes.io/zone";
  auto r = render_job(inputs({"torchrun", "--nnodes=4", "train.py"}, o));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->job["spec"]["spares"], 2);
  EXPECT_EQ(r->job["spec"]["placement"], (json{{"topologyKey", "topology.kubernetes.io/zone"}}));
  auto plain = render_job(inputs({"torchrun", "--nnodes=4", "train.py"}));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->job["spec"].contains("spares"));
  EXPECT_FALSE(plain->job["spec"].contains("placement"));
  // The operator's own message, before anything exists: a spare never takes node 0's place.
  auto refused = render_job(inputs({"torchrun", "--nproc-per-node=2", "train.py"}, o));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("spec.spares: a spare takes the place of a lost node other than node 0"),
            std::string::npos) << refused.error().message;
}

TEST(RenderJob, ShippedCodeIsUnpackedByTheSetupContainerFromConfigMaps) {
  JobInputs in = inputs({"torchrun", "train.py"});
  in.chunks = {std::string("ab\0c", 4), "d"};
  auto r = render_job(in);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->config_maps.size(), 2u);
  EXPECT_EQ(r->config_maps[0]["metadata"]["name"], "train-abcde-workdir-0");
  EXPECT_EQ(r->config_maps[0]["metadata"]["labels"][kWorkdirLabel], "train-abcde");
  EXPECT_EQ(r->config_maps[0]["binaryData"]["workdir.tar.000"], "YWIAYw==");
  EXPECT_EQ(r->config_maps[1]["binaryData"]["workdir.tar.001"], "ZA==");
  const json& pod = r->job["spec"]["template"]["spec"];
  ASSERT_EQ(pod["initContainers"].size(), 1u);
  EXPECT_EQ(pod["initContainers"][0]["name"], kSetupContainer);
  EXPECT_EQ(pod["initContainers"][0]["image"], "img:1");
  EXPECT_EQ(pod["containers"][0]["workingDir"], kWorkdirPath);
  EXPECT_EQ(pod["volumes"][0]["projected"]["sources"].size(), 2u);
  // The operator's own template rules (and the CRD's CEL twins: nothing mounted under /kubedist) accept the volumes
  // and paths the plugin adds; the setup script unpacks where the trainer works.
  auto checked = trainingjob::check_template(r->job["spec"]["template"]);
  EXPECT_TRUE(checked.ok()) << checked.error().message;
  const std::string script = pod["initContainers"][0]["command"][2];
  EXPECT_NE(script.find(std::string("cat ") + kCodePath + "/workdir.tar.* | tar -x -f - -C " + kWorkdirPath),
            std::string::npos) << script;
  json owned = owned_by_job(r->config_maps[0], {{"metadata", {{"name", "train-abcde"}, {"uid", "u-1"}}}});
  EXPECT_EQ(owned["metadata"]["ownerReferences"][0]["uid"], "u-1");
  EXPECT_EQ(owned["metadata"]["ownerReferences"][0]["kind"], "TrainingJob");
}

TEST(RenderJob, PipPackagesGoToAVolumeOnThePythonPath) {
  RunOptions o;
  o.pip = {"kdtestpkg==0.1", "numpy"};
  o.pip_index_url = "http://index.ns.svc:8000/simple";
  o.env = {{"PYTHONPATH", "/mine"}};
  auto r = render_job(inputs({"torchrun", "train.py"}, o));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const json& pod = r->job["spec"]["template"]["spec"];
  const json& setup = pod["initContainers"][0];
  EXPECT_NE(setup["command"][2].get<std::string>().find(std::string("--target ") + kPipPath), std::string::npos);
  const json cmd = setup["command"];
  EXPECT_EQ(cmd[cmd.size() - 2], "kdtestpkg==0.1");
  EXPECT_EQ(cmd[cmd.size() - 1], "numpy");
  json setup_env = env_of(setup);
  EXPECT_EQ(setup_env["PIP_INDEX_URL"], "http://index.ns.svc:8000/simple");
  EXPECT_EQ(setup_env["PIP_TRUSTED_HOST"], "index.ns.svc");
  EXPECT_EQ(env_of(pod["containers"][0])["PYTHONPATH"], std::string(kPipPath) + ":/mine");
}

TEST(RenderJob, YamlReadsBackAsTheSameObjects) {
  RunOptions o;
  o.env = {{"FLAG", "true"}, {"N", "007"}, {"EMPTY", ""}, {"MULTI", "a\nb"}, {"NULLISH", "null"}};
  JobInputs in = inputs({"torchrun", "--nnodes=1:2", "train.py", "--lr", "0.1", "yes"}, o);
  in.chunks = {"x"};
  auto r = render_job(in);
  ASSERT_TRUE(r.ok());
  std::vector<json> docs = {r->job, r->config_maps[0]};
  const std::string text = to_yaml(docs);
  auto read = YAML::LoadAll(text);
  ASSERT_EQ(read.size(), 2u);
  // Compare through a YAML -> JSON walk that keeps scalars' types as YAML resolves them.
  std::function<json(const YAML::Node&)> to_json = [&](const YAML::Node& n) -> json {
    if (n.IsMap()) {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = to_json(kv.second);
      return o;
    }
    if (n.IsSequence()) {
      json a = json::array();
      for (const auto& v : n) a.push_back(to_json(v));
      return a;
    }
    if (n.IsNull()) return nullptr;
    const std::string s = n.Scalar();
    if (n.Tag() == "!") return s;  // quoted: a string whatever it looks like
    if (s == "true" || s == "false") return s == "true";
    if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) return std::stoll(s);
    return s;
  };
  EXPECT_EQ(to_json(read[0]), r->job);
  EXPECT_EQ(to_json(read[1]), r->config_maps[0]);
}

TEST(RenderJob, WithoutANamespaceKubectlApplyChooses) {
  JobInputs in = inputs({"torchrun", "train.py"});
  in.ns = "";
  in.chunks = {"x"};
  auto r = render_job(in);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->job["metadata"].contains("namespace"));
  EXPECT_FALSE(r->config_maps[0]["metadata"].contains("namespace"));
}

TEST(RenderJob, WorkerCommands) {
  TrainingCommand c;
  c.program_args = {"a"};
  EXPECT_EQ(worker_command(c, "t.py"), (std::vector<std::string>{"python3", "-u", "t.py", "a"}));
  c.module = true;
  EXPECT_EQ(worker_command(c, "pkg.t"), (std::vector<std::string>{"python3", "-u", "-m", "pkg.t", "a"}));
  c.module = false;
  c.no_python = true;
  EXPECT_EQ(worker_command(c, "./run.sh"), (std::vector<std::string>{"./run.sh", "a"}));
}

TEST(JobName, FromTheProgramWithASuffix) {
  EXPECT_EQ(default_job_name("src/Train_GPT.py", "x1y2z"), "train-gpt-x1y2z");
  EXPECT_EQ(default_job_name("pkg.train", "abcde"), "train-abcde");
  EXPECT_EQ(default_job_name("2go.py", "abcde"), "job-2go-abcde");
  EXPECT_TRUE(check_job_name(default_job_name(std::string(80, 'a') + ".py", "abcde"), 100).ok());
}

TEST(Ignore, GitignorePatterns) {
  EXPECT_TRUE(glob_match("*.pt", "model.pt"));
  EXPECT_FALSE(glob_match("*.pt", "a/model.pt"));
  EXPECT_TRUE(glob_match("**/ckpt", "a/b/ckpt"));
  EXPECT_TRUE(glob_match("**/ckpt", "ckpt"));
  EXPECT_TRUE(glob_match("data/**", "data/x/y"));
  EXPECT_TRUE(glob_match("a/**/b", "a/x/y/b"));
  EXPECT_TRUE(glob_match("a/**/b", "a/b"));
  EXPECT_TRUE(glob_match("file[0-9].txt", "file3.txt"));
  EXPECT_FALSE(glob_match("file[!0-9].txt", "file3.txt"));
  EXPECT_TRUE(glob_match("?.py", "a.py"));

  IgnoreRules rules;
  rules.add("", "# comment\n*.pt\n!keep.pt\n/build/\nlogs/\ndocs/*.md\n\n");
  rules.add("sub", "local.txt\n/only-here\n");
  EXPECT_TRUE(rules.ignored("model.pt", false));
  EXPECT_TRUE(rules.ignored("a/b/model.pt", false));
  EXPECT_FALSE(rules.ignored("keep.pt", false));
  EXPECT_TRUE(rules.ignored("build", true));
  EXPECT_FALSE(rules.ignored("build", false));  // a file named build: the rule is for directories
  EXPECT_FALSE(rules.ignored("src/build", true));  // anchored to the top
  EXPECT_TRUE(rules.ignored("x/logs", true));
  EXPECT_TRUE(rules.ignored("docs/a.md", false));
  EXPECT_FALSE(rules.ignored("docs/sub/a.md", false));
  EXPECT_TRUE(rules.ignored("sub/local.txt", false));
  EXPECT_TRUE(rules.ignored("sub/deeper/local.txt", false));
  EXPECT_FALSE(rules.ignored("local.txt", false));
  EXPECT_TRUE(rules.ignored("sub/only-here", false));
  EXPECT_FALSE(rules.ignored("sub/deeper/only-here", false));
}

// The entries of a ustar archive: path -> (type, mode, content).
struct Entry {
  char type;
  unsigned mode;
  std::string data;
  std::string link;
};
std::map<std::string, Entry> read_tar(const std::string& tar) {
  std::map<std::string, Entry> out;
  for (size_t off = 0; off + 512 <= tar.size();) {
    const char* h = tar.data() + off;
    if (h[0] == '\0') break;
    std::string name(h, strnlen(h, 100)), prefix(h + 345, strnlen(h + 345, 155));
    const size_t size = std::stoul(std::string(h + 124, 11), nullptr, 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
    EXPECT_EQ(sum, std::stoul(std::string(h + 148, 6), nullptr, 8)) << name;
    Entry e{h[156], static_cast<unsigned>(std::stoul(std::string(h + 100, 7), nullptr, 8)),
            tar.substr(off + 512, size), std::string(h + 157, strnlen(h + 157, 100))};
    out[prefix.empty() ? name : prefix + "/" + name] = e;
    off += 512 + (size + 511) / 512 * 512;
  }
  return out;
}

class Workdir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kubectl-workdir-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& data) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel, std::ios::binary) << data;
  }
  fs::path dir_;
};

TEST_F(Workdir, ArchivesFilesBinarySafeWithModesAndRespectsIgnoreFiles) {
  const std::string binary("\x00\xff\x01\n\r\x7f", 6);
  write("train.py", "print('hi')\n");
  write("run.sh", "#!/bin/sh\n");
  ::chmod((dir_ / "run.sh").c_str(), 0755);
  write("data/blob.bin", binary);
  write("ckpt/model.pt", "big");
  write("logs/x.log", "x");
  write(".git/HEAD", "ref");
  write(".gitignore", "ckpt/\n");
  write(".kubedistignore", "*.log\n");
  write("sub/.gitignore", "secret.txt\n");
  write("sub/secret.txt", "s");
  write("sub/kept.txt", "k");
  const std::string deep = std::string(90, 'd') + "/" + std::string(60, 'e') + "/f.py";
  write(deep, "deep");
  fs::create_symlink("train.py", dir_ / "link.py");
  auto a = archive_workdir(dir_.string());
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto entries = read_tar(a->tar);
  EXPECT_EQ(entries["data/blob.bin"].data, binary);
  EXPECT_EQ(entries["train.py"].data, "print('hi')\n");
  EXPECT_EQ(entries["run.sh"].mode, 0755u);
  EXPECT_EQ(entries["link.py"].type, '2');
  EXPECT_EQ(entries["link.py"].link, "train.py");
  EXPECT_EQ(entries[deep].data, "deep");
  EXPECT_EQ(entries["sub/kept.txt"].data, "k");
  EXPECT_EQ(entries.count("sub/secret.txt"), 0u);
  EXPECT_EQ(entries.count("ckpt/model.pt"), 0u);
  EXPECT_EQ(entries.count("ckpt/"), 0u);
  EXPECT_EQ(entries.count("logs/x.log"), 0u);
  EXPECT_EQ(entries.count(".git/HEAD"), 0u);
  EXPECT_EQ(a->tar.size() % 512, 0u);
}

TEST_F(Workdir, OverTheLimitNamesTheLargestFilesAndTheWayOut) {
  write("train.py", "x");
  write("weights.bin", std::string(kMaxArchiveBytes, 'w'));
  auto a = archive_workdir(dir_.string());
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("weights.bin"), std::string::npos) << a.error().message;
  EXPECT_NE(a.error().message.find(".kubedistignore"), std::string::npos);
  EXPECT_NE(a.error().message.find("--image"), std::string::npos);
  EXPECT_NE(a.error().message.find("6.0 MiB"), std::string::npos);
  write(".kubedistignore", "*.bin\n");
  EXPECT_TRUE(archive_workdir(dir_.string()).ok());
}

TEST_F(Workdir, ChunksFitConfigMaps) {
  write("a.bin", std::string(kChunkBytes * 2, 'a'));
  auto a = archive_workdir(dir_.string());
  ASSERT_TRUE(a.ok());
  auto chunks = split_chunks(a->tar);
  ASSERT_EQ(chunks.size(), 3u);
  std::string joined;
  for (const auto& c : chunks) {
    EXPECT_LE(c.size(), kChunkBytes);
    joined += c;
  }
  EXPECT_EQ(joined, a->tar);
}

TEST_F(Workdir, PlanFindsTheScriptAndShipsItsDirectory) {
  write("proj/src/train.py", "x");
  write("proj/src/util.py", "y");
  write("proj/README", "r");
  RunOptions o;
  o.command = {"torchrun", "--nnodes=2", "src/train.py"};
  auto plan = plan_run(o, (dir_ / "proj").string(), "ns");
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->workdir, (dir_ / "proj/src").string());
  EXPECT_EQ(plan->inputs.program, "train.py");
  EXPECT_EQ(plan->files, 2u);
  o.workdir = ".";
  plan = plan_run(o, (dir_ / "proj").string(), "ns");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->inputs.program, "src/train.py");
  EXPECT_EQ(plan->files, 3u);
  EXPECT_EQ(plan->rendered.job["spec"]["template"]["spec"]["containers"][0]["command"][2], "src/train.py");
  o.workdir = "elsewhere";
  fs::create_directories(dir_ / "proj/elsewhere");
  auto outside = plan_run(o, (dir_ / "proj").string(), "ns");
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message.find("outside"), std::string::npos);
}

TEST_F(Workdir, AMissingScriptIsOneLineNamingTheWaysOut) {
  RunOptions o;
  o.command = {"torchrun", "missing.py"};
  auto plan = plan_run(o, dir_.string(), "ns");
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("missing.py: no such file"), std::string::npos);
  EXPECT_NE(plan.error().message.find("--workdir"), std::string::npos);
  o.image = "mine:1";  // then the script may be the image's
  auto in_image = plan_run(o, dir_.string(), "ns");
  ASSERT_TRUE(in_image.ok()) << in_image.error().message;
  EXPECT_TRUE(in_image->rendered.config_maps.empty());
  EXPECT_FALSE(in_image->notes.empty());
  o.image = "";
  o.name = "Bad_Name";
  write("t.py", "x");
  o.command = {"t.py"};
  auto bad = plan_run(o, dir_.string(), "ns");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("DNS label"), std::string::npos);
}

}  // namespace
}  // namespace kubedist::kubectl
