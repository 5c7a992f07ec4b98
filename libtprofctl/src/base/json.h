// JSON in the library: nlohmann::ordered_json, so that fields appear in the
// order they are set (a person reads them too). Internal, like nlohmann's
// headers: the public headers hand JSON over as text.
#pragma once

#include <nlohmann/json.hpp>

#include "tprof/output/json_format.h"

namespace tprof {

using Json = nlohmann::ordered_json;

}  // namespace tprof
