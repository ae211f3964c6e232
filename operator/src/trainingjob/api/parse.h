// Reading API JSON, one file per kind of input: a TrainingJob and its spec rules (parse_spec.h), its status
// (status_json.h), and the facts of the other objects the operator watches (facts.h). Include what you use; this
// header names all three for callers that read everything.
#pragma once

#include "trainingjob/api/facts.h"
#include "trainingjob/api/parse_spec.h"
#include "trainingjob/api/status_json.h"
