// SelectionMemo: registration's bundle selections, remembered by entry IDs (check_image uses it).
#include "hipguard/check.h"

namespace hipguard {

bool SelectionMemo::same_context(const std::vector<TargetId>& targets, const Machine& machine) const {
  return targets_ == targets && runtime_ == machine.runtime && one_process_ == machine.one_process;
}

std::optional<std::vector<SelectionMemo::Choice>> SelectionMemo::find(const std::vector<TargetId>& targets,
                                                                      const Machine& machine,
                                                                      const std::string& ids) const {
  std::lock_guard lock(mu_);
  if (!same_context(targets, machine)) return std::nullopt;
  auto it = tables_.find(ids);
  if (it == tables_.end()) return std::nullopt;
  return it->second;
}

size_t SelectionMemo::size() const {
  std::lock_guard lock(mu_);
  return tables_.size();
}

void SelectionMemo::remember(const std::vector<TargetId>& targets, const Machine& machine, std::string ids,
                             std::vector<Choice> choices) {
  std::lock_guard lock(mu_);
  if (!same_context(targets, machine)) {
    tables_.clear();
    targets_ = targets;
    runtime_ = machine.runtime;
    one_process_ = machine.one_process;
  }
  if (tables_.size() < kMaxTables && ids.size() <= kMaxKeyBytes) tables_.emplace(std::move(ids), std::move(choices));
}

}  // namespace hipguard
