// --signals-to-handle: torchrun's list of signal names ("SIGTERM,SIGINT,SIGHUP,SIGQUIT") as signal numbers (pure).
#pragma once

#include <string>
#include <vector>

#include "util/result.h"

namespace kubedist::launcher {

// torchrun 2.15's default: the signals its agent turns into a stop of the workers with that same signal.
inline constexpr const char* kDefaultSignalsToHandle = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";

// The signals a comma-separated list of names names, in order, without repeats. Names are Python's signal.Signals
// names (SIGTERM), as torchrun looks them up; blanks around a name are ignored. SIGKILL and SIGSTOP cannot be
// caught, and SIGCHLD is how the launcher learns that a worker ended: those are refused, as is an empty list. The
// error is what is wrong, for the caller to prefix with the flag's source.
Result<std::vector<int>> parse_signal_names(const std::string& list);

// "SIGTERM" for SIGTERM; "signal N" for one without a name here.
std::string signal_name(int signal);

}  // namespace kubedist::launcher
