// Output prefixes and routes for --redirects / --tee / --local-ranks-filter, and the /metrics text.
#include <gtest/gtest.h>

#include "cli/launch_config.h"
#include "io/log_mux.h"
#include "io/metrics.h"
#include "io/metrics_server.h"
#include "workers/output_routes.h"

namespace kubedist::launcher {
namespace {

TEST(LinePrefixer, APartialLineIsHeldUpToItsBoundThenGoesOutAsALine) {
  LinePrefixer p("[rank 0]: ");
  const std::string bar(1000, '\r');  // a progress bar that never ends its line
  std::string out;
  for (size_t i = 0; i < LinePrefixer::kMaxPartialLine / bar.size(); ++i) out += p.feed(bar);
  EXPECT_EQ(out, "");
  out = p.feed(bar);
  EXPECT_EQ(out.size(), std::string("[rank 0]: ").size() + LinePrefixer::kMaxPartialLine + bar.size() -
                            LinePrefixer::kMaxPartialLine % bar.size() + 1);
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(p.feed("done\n"), "[rank 0]: done\n") << "nothing of the bar is held any more";
}

TEST(LinePrefixer, PrefixesEveryLineAndHoldsPartialLines) {
  LinePrefixer p("[rank 3]: ");
  EXPECT_EQ(p.feed("a\nb"), "[rank 3]: a\n");
  EXPECT_EQ(p.feed("c\n\nd"), "[rank 3]: bc\n[rank 3]: \n");
  EXPECT_EQ(p.finish(), "[rank 3]: d\n");
  EXPECT_EQ(p.finish(), "");
}

LaunchConfig config(std::vector<std::string> args) { return parse_launch_config(args, {}).value(); }

TEST(OutputRoutes, RedirectTeeAndFilter) {
  auto none = route_for(config({"t.py"}), 0, 0, 1, "/a/0", "h");
  EXPECT_FALSE(none.capture);
  auto redirect = route_for(config({"--redirects=1", "t.py"}), 0, 4, 1, "/a/0", "h");
  EXPECT_TRUE(redirect.capture);
  EXPECT_EQ(redirect.file, "/a/0/stdout.log");
  EXPECT_EQ(redirect.console_fd, -1);
  EXPECT_FALSE(route_for(config({"--redirects=1", "t.py"}), 0, 4, 2, "/a/0", "h").capture);
  auto tee = route_for(config({"--tee=3", "t.py"}), 1, 5, 2, "/a/0", "h");
  EXPECT_EQ(tee.file, "/a/0/stderr.log");
  EXPECT_EQ(tee.console_fd, 2);
  EXPECT_EQ(tee.prefix, "[rank 5]: ");
  auto hidden = route_for(config({"--tee=3", "--local-ranks-filter=0", "t.py"}), 1, 5, 1, "/a/0", "h");
  EXPECT_TRUE(hidden.capture);
  EXPECT_EQ(hidden.console_fd, -1);
  EXPECT_EQ(hidden.file, "/a/0/stdout.log");
  EXPECT_EQ(route_for(config({"--tee=3", "--local-ranks-filter=0", "t.py"}), 0, 4, 1, "/a/0", "h").console_fd, 1);
}

TEST(OutputRoutes, ThePrefixTemplateShapesTheConsoleLinesAsTorchrunsDoes) {
  auto route = route_for(config({"--tee=3", "--role=trainer", "--log-line-prefix-template=${hostname}:${rank}: ", "t.py"}),
                         1, 5, 1, "/a/1", "r12i0n8");
  EXPECT_EQ(route.prefix, "r12i0n8:5: ");
  EXPECT_EQ(route_for(config({"--tee=3", "--role=t", "--log-line-prefix-template=[$role_name${local_rank}]:", "t.py"}),
                      1, 5, 1, "/a/1", "h").prefix,
            "[t1]:");
  EXPECT_EQ(route_for(config({"--tee=3", "t.py"}), 1, 5, 1, "/a/1", "h").prefix, "[rank 5]: ") << "ours by default";
}

TEST(OutputRoutes, DuplicateFiltersCopyOnlyTheStreamsShownTeedToTheAttemptsFile) {
  auto cfg = config({"--tee=1", "--local-ranks-filter=0", "--duplicate-stdout-filters=loss,,x,NaN",
                     "--duplicate-stderr-filters=E", "t.py"});
  auto shown = route_for(cfg, 0, 4, 1, "/a/0", "h");
  EXPECT_EQ(shown.filter_file, "/a/filtered_stdout.log");
  EXPECT_EQ(shown.filters, (std::vector<std::string>{"loss,x", "NaN"}));
  EXPECT_EQ(route_for(cfg, 1, 5, 1, "/a/1", "h").filter_file, "") << "outside --local-ranks-filter: not tailed";
  EXPECT_EQ(route_for(cfg, 0, 4, 2, "/a/0", "h").filter_file, "") << "stderr is not teed";
  EXPECT_EQ(route_for(config({"--tee=3", "t.py"}), 0, 4, 1, "/a/0", "h").filter_file, "") << "no filters";
}

TEST(LinePrefixer, WithWordsOnlyTheLinesContainingOneComeOutPrefixed) {
  LinePrefixer p("[r0]:", {"loss", "NaN"});
  EXPECT_EQ(p.feed("step 1 loss=3\nhello\nlo"), "[r0]:step 1 loss=3\n");
  EXPECT_EQ(p.feed("ss=NaN"), "");
  EXPECT_EQ(p.finish(), "[r0]:loss=NaN\n");
  LinePrefixer q("[r0]:", {"x"});
  EXPECT_EQ(q.feed("partial"), "");
  EXPECT_EQ(q.finish(), "") << "a partial last line without a match is dropped";
}

TEST(Metrics, RendersPrometheusTextWithEveryLauncherMetric) {
  LauncherMetrics m{3, 4, 3, 2, 0.25, {{3, 0.21}, {12, 1.5}}, 7, 2};
  auto text = render_metrics(m);
  EXPECT_NE(text.find("# TYPE kubedist_rank_step_seconds gauge\nkubedist_rank_step_seconds{rank=\"3\"} 0.210000\n"
                      "kubedist_rank_step_seconds{rank=\"12\"} 1.500000\n"),
            std::string::npos);
  EXPECT_NE(text.find("kubedist_launcher_progress_reports_dropped_total 7\n"), std::string::npos);
  EXPECT_NE(text.find("kubedist_launcher_progress_reports_malformed_total 2\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE kubedist_launcher_worker_restarts_total counter\nkubedist_launcher_worker_restarts_total 3\n"), std::string::npos);
  EXPECT_NE(text.find("kubedist_launcher_rendezvous_rounds_total 4\n"), std::string::npos);
  EXPECT_NE(text.find("kubedist_launcher_workers_running 2\n"), std::string::npos);
  EXPECT_NE(text.find("kubedist_launcher_last_recovery_seconds 0.250000\n"), std::string::npos);
}

TEST(Metrics, HttpAnswersMetricsAndRefusesTheRest) {
  LauncherMetrics m;
  EXPECT_EQ(http_response_for("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", m).rfind("HTTP/1.0 200 OK\r\n", 0), 0u);
  EXPECT_EQ(http_response_for("GET /other HTTP/1.1\r\n\r\n", m).rfind("HTTP/1.0 404", 0), 0u);
  EXPECT_EQ(http_response_for("POST /metrics HTTP/1.1\r\n\r\n", m).rfind("HTTP/1.0 405", 0), 0u);
}

}  // namespace
}  // namespace kubedist::launcher
