// LineSplitter: how Client::stream_lines cuts a watch or a followed log into lines, fed chunks of every size.
#include "kube/line_splitter.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kubedist::kube {
namespace {

// Feeds text in chunks of `chunk` bytes, then ends the stream; the lines handed on, or the error's message.
struct Fed {
  std::vector<std::string> lines;
  std::string error;
};
Fed feed_in_chunks(const std::string& text, size_t chunk, size_t max_line = LineSplitter::kDefaultMaxLine) {
  LineSplitter splitter(max_line);
  Fed fed;
  auto on_line = [&](const std::string& line) {
    fed.lines.push_back(line);
    return true;
  };
  for (size_t at = 0; at < text.size(); at += chunk) {
    auto r = splitter.feed(std::string_view(text).substr(at, chunk), on_line);
    if (!r) {
      fed.error = r.error().message;
      return fed;
    }
  }
  auto r = splitter.finish(on_line);
  if (!r) fed.error = r.error().message;
  return fed;
}

TEST(LineSplitter, GivesTheSameLinesWhateverTheChunksAre) {
  const std::string text = "{\"type\":\"ADDED\"}\r\n\nsecond line\nthird\r\nlast without newline";
  const std::vector<std::string> want = {"{\"type\":\"ADDED\"}", "", "second line", "third", "last without newline"};
  for (size_t chunk = 1; chunk <= text.size(); ++chunk) {
    const Fed fed = feed_in_chunks(text, chunk);
    EXPECT_EQ(fed.lines, want) << "chunks of " << chunk;
    EXPECT_EQ(fed.error, "");
  }
}

TEST(LineSplitter, AnEndedStreamWithoutATrailingLineGivesNoEmptyLine) {
  EXPECT_EQ(feed_in_chunks("a\nb\n", 3).lines, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(feed_in_chunks("", 1).lines.empty());
}

TEST(LineSplitter, StopsWhenTheReaderAsksTo) {
  LineSplitter splitter;
  std::vector<std::string> lines;
  auto r = splitter.feed("one\ntwo\nthree\n", [&](const std::string& line) {
    lines.push_back(line);
    return line != "two";
  });
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two"}));
}

TEST(LineSplitter, RefusesALineLongerThanTheBoundWithoutBufferingIt) {
  // A line of exactly the bound passes, with or without "\r"; one byte more is refused, however it is chunked.
  const std::string fits(8, 'x');
  for (size_t chunk : {1, 3, 20}) {
    EXPECT_EQ(feed_in_chunks(fits + "\n" + fits + "\r\nok\n", chunk, 8).lines,
              (std::vector<std::string>{fits, fits, "ok"}));
    const Fed over = feed_in_chunks("ok\n" + fits + "y\nnever\n", chunk, 8);
    EXPECT_EQ(over.lines, (std::vector<std::string>{"ok"}));
    EXPECT_EQ(over.error, "a line of the stream is longer than 8 bytes: the stream is not read on");
    EXPECT_EQ(feed_in_chunks(fits + "yz", chunk, 8).error,
              "a line of the stream is longer than 8 bytes: the stream is not read on");
    EXPECT_EQ(feed_in_chunks(fits + "y", chunk, 8).error,  // the stream ended inside the long line
              "a line of the stream is longer than 8 bytes: the stream is not read on");
  }
  // A peer that never sends a newline is refused once it passes the bound, not at the end of its stream.
  LineSplitter splitter(LineSplitter::kDefaultMaxLine);
  const std::string mib(size_t{1} << 20, 'x');
  auto never = [](const std::string&) { return true; };
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(splitter.feed(mib, never).ok()) << i;
  auto r = splitter.feed("xx", never);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "a line of the stream is longer than 16 MiB: the stream is not read on");
}

}  // namespace
}  // namespace kubedist::kube
