// What the Karukan addon draws: the preedit, the candidate (or suggestion) list with its footer
// and the aux text of each view the engine service answers with.

#include "karukan.h"

#include <algorithm>

#include <fcitx-utils/capabilityflags.h>
#include <fcitx/inputpanel.h>
#include <fcitx/text.h>
#include <fcitx/userinterface.h>

namespace fcitx {

namespace {

// The footer of a suggestion list nobody has entered yet (SUGGESTION_HINT in view.py).
constexpr char kSuggestionHint[] = "Tabキーで選択";

bool sameItems(const std::vector<Item> &a, const std::vector<Item> &b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].data() != b[i].data()) {
            return false;
        }
    }
    return true;
}

// Byte offset of the first `chars` UTF-8 characters of text.
size_t utf8Bytes(const std::string &text, uint32_t chars) {
    size_t i = 0;
    for (uint32_t c = 0; c < chars && i < text.size(); ++c) {
        ++i;
        while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) {
            ++i;
        }
    }
    return i;
}

// The line under the list, as View.candidate_footer (karukan_engine/session/view.py) writes it:
// the selected candidate's place over all pages ([2/37]), or how to enter a suggestion list.
// Every page but the last is full, so the last starts at total - its length, any other at
// page × its length. The suggestion list is one page.
std::string footer(const std::vector<Item> &list, int32_t cursor, bool suggestions, int32_t page, int32_t pages,
                   uint32_t total) {
    if (list.empty()) {
        return "";
    }
    if (cursor < 0) {
        return suggestions ? kSuggestionHint : "";
    }
    const int64_t size = static_cast<int64_t>(list.size());
    if (suggestions) {
        page = 0;
        pages = 1;
        total = static_cast<uint32_t>(size);
    }
    const int64_t first = page >= pages - 1 ? static_cast<int64_t>(total) - size : static_cast<int64_t>(page) * size;
    return "[" + std::to_string(std::max<int64_t>(0, first) + cursor + 1) + "/" + std::to_string(total) + "]";
}

}  // namespace

void KarukanEngine::clearPanel(InputContext *ic) {
    ic->propertyFor(&factory_)->onReturn.clear();
    ic->inputPanel().reset();
    ic->updatePreedit();
    ic->updateUserInterface(UserInterfaceComponent::InputPanel);
}

namespace {

bool sameText(const Text &a, const Text &b) {
    if (a.size() != b.size() || a.cursor() != b.cursor()) {
        return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
        if (a.stringAt(i) != b.stringAt(i) || a.formatAt(i) != b.formatAt(i)) {
            return false;
        }
    }
    return true;
}

}  // namespace

// Show a view: reply is true for a method's answer (which may repeat the previous reply's
// suggestion list by reference), false for a ViewUpdated signal (always whole).
void KarukanEngine::apply(InputContext *ic, const WireView &wire, bool reply, bool commit) {
    const auto &[handled, commitText, spans, caret, items, cursor, page, pages, total, aux, mode, enabled,
                 suggestions, suggestionCursor, onReturn] = wire.data();
    (void)handled, (void)mode, (void)enabled;
    auto *state = ic->propertyFor(&factory_);
    state->onReturn = onReturn;
    if (!composing(wire)) {
        state->composition.clear();   // committed or cancelled: nothing to restore
        state->compositionTooLong = false;
    }
    static const std::vector<Item> none;
    const std::vector<Item> *listed = &suggestions;
    int32_t listedCursor = suggestionCursor;
    if (suggestionCursor == kSuggestionsUnchanged) {
        listed = reply ? &state->repliedSuggestions : &none;
        listedCursor = reply ? state->repliedCursor : -1;
    } else if (reply) {
        state->repliedSuggestions = suggestions;
        state->repliedCursor = suggestionCursor;
    }
    if (commit && !commitText.empty()) {
        ic->commitString(commitText);
    }
    Text preedit;
    std::string whole;
    for (const auto &span : spans) {
        const auto &[text, style] = span.data();
        preedit.append(text, style == 1 ? TextFormatFlags{TextFormatFlag::HighLight}
                                        : TextFormatFlags{TextFormatFlag::Underline});
        whole += text;
    }
    if (!whole.empty()) {
        preedit.setCursor(static_cast<int>(utf8Bytes(whole, caret)));
    }
    // Conversion candidates, or else the suggestions while composing (no cursor until one is
    // selected with Tab / Down); a view never carries both.
    const std::vector<Item> &list = !items.empty() ? items : *listed;
    const int32_t listCursor = !items.empty() ? cursor : listedCursor;
    const std::string footerText = footer(list, listCursor, items.empty(), page, pages, total);
    auto &panel = ic->inputPanel();
    const bool clientPreedit = ic->capabilityFlags().test(CapabilityFlag::Preedit);
    // The application's preedit goes out only when it changes: a key's release and a late view
    // that brings only a suggestion list repeat the text, and each repeat is one more redraw.
    // After a commit it goes again (some toolkits drop their preedit with the commit).
    const bool preeditChanged = !clientPreedit || !sameText(panel.clientPreedit(), preedit) || (commit && !commitText.empty());
    const bool sameList = panel.candidateList().get() == (list.empty() ? nullptr : state->shownList) &&
                          (list.empty() || (sameItems(list, state->shownItems) && listCursor == state->shownCursor));
    if (clientPreedit && sameList && panel.auxUp().toString() == aux && panel.auxDown().toString() == footerText &&
        panel.preedit().empty()) {
        // Only the application's own preedit changes: the candidate window (fcitx5's, or the
        // client's own) is left as it is instead of being rebuilt and redrawn for every key.
        if (preeditChanged) {
            panel.setClientPreedit(preedit);
            ic->updatePreedit();
        }
        return;
    }
    panel.setClientPreedit(clientPreedit ? preedit : Text());
    panel.setPreedit(clientPreedit ? Text() : preedit);
    panel.setAuxUp(aux.empty() ? Text() : Text(aux));
    panel.setAuxDown(footerText.empty() ? Text() : Text(footerText));
    if (!sameList) {
        if (list.empty()) {
            panel.setCandidateList(nullptr);
            state->shownList = nullptr;
        } else {
            panel.setCandidateList(candidateList(list, listCursor));
            state->shownList = panel.candidateList().get();
        }
        state->shownItems = list;
        state->shownCursor = listCursor;
    }
    if (preeditChanged) {
        ic->updatePreedit();
    }
    ic->updateUserInterface(UserInterfaceComponent::InputPanel);
}

std::unique_ptr<CommonCandidateList> KarukanEngine::candidateList(const std::vector<Item> &items, int32_t cursor) {
    auto list = std::make_unique<CommonCandidateList>();
    std::vector<std::string> labels;
    int index = 0;
    for (const auto &item : items) {
        const auto &[label, text, note] = item.data();
        labels.push_back(label + ". ");
        list->append<KarukanCandidate>(this, index++, note.empty() ? text : text + " " + note);
    }
    list->setLabels(labels);
    list->setPageSize(static_cast<int>(items.size()));
    list->setGlobalCursorIndex(cursor);
    list->setLayoutHint(layout_);
    return list;
}

}  // namespace fcitx
