// `bekc completion bash|zsh|fish` and `bekc man`: shell completion and a man
// page written from the CLI11 definitions themselves (the commands, their
// options and help), so neither can drift from what bekc parses.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "driver/fatal.hpp"
#include "util/version.hpp"

namespace bekc::cli {

namespace {

struct OptionDoc {
    std::vector<std::string> spellings;  // "-o", "--output-dir"
    std::string value;                   // "TEXT", "INT"; empty for a flag
    std::string help;
};

struct CommandDoc {
    std::string path;  // "" for bekc itself, "cache ls"
    std::string help;
    std::vector<OptionDoc> options;      // its own
    std::vector<OptionDoc> inherited;    // its parents' it takes too (fallthrough)
    std::vector<OptionDoc> positionals;  // spellings: the name
    std::vector<std::pair<std::string, std::string>> subcommands;  // name, help
};

OptionDoc option_doc(const CLI::Option& opt) {
    OptionDoc d;
    if (opt.get_positional()) {
        d.spellings = {opt.get_name()};
    } else {
        for (const auto& s : opt.get_snames()) d.spellings.push_back("-" + s);
        for (const auto& l : opt.get_lnames()) d.spellings.push_back("--" + l);
    }
    if (opt.get_items_expected_max() > 0) {
        std::string type = opt.get_type_name();
        d.value = type.substr(0, type.find_first_of(":="));
    }
    d.help = opt.get_description();
    return d;
}

std::vector<OptionDoc> own_options(const CLI::App& app, bool positional) {
    std::vector<OptionDoc> out;
    for (const CLI::Option* opt : app.get_options())
        if (opt->get_positional() == positional) out.push_back(option_doc(*opt));
    return out;
}

// `app` and every command below it, parents first.
void collect(CLI::App& app, const std::string& path, std::vector<CommandDoc>& out) {
    CommandDoc d{path, app.get_description(),  own_options(app, false),
                 {},   own_options(app, true), {}};
    for (const CLI::App* p = app.get_parent(); p && app.get_fallthrough(); p = p->get_parent())
        for (const CLI::Option* opt : p->get_options())
            if (!opt->get_positional() && opt != p->get_help_ptr() && opt != p->get_version_ptr())
                d.inherited.push_back(option_doc(*opt));
    std::vector<CLI::App*> subs = app.get_subcommands({});
    for (CLI::App* sub : subs) d.subcommands.emplace_back(sub->get_name(), sub->get_description());
    out.push_back(std::move(d));
    for (CLI::App* sub : subs)
        collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
}

std::vector<CommandDoc> command_docs(CLI::App& root) {
    std::vector<CommandDoc> out;
    collect(root, "", out);
    return out;
}

// Every option a command takes: its own and those it inherits.
std::vector<OptionDoc> all_options(const CommandDoc& c) {
    std::vector<OptionDoc> out = c.options;
    out.insert(out.end(), c.inherited.begin(), c.inherited.end());
    return out;
}

// The spellings of `c`'s options, those that take a value or all.
std::string spellings(const CommandDoc& c, bool values_only) {
    std::string out;
    for (const OptionDoc& o : all_options(c))
        if (!values_only || !o.value.empty())
            for (const auto& s : o.spellings) out += (out.empty() ? "" : " ") + s;
    return out;
}

std::string subcommand_names(const CommandDoc& c) {
    std::string out;
    for (const auto& [name, help] : c.subcommands) out += (out.empty() ? "" : " ") + name;
    return out;
}

// `text` in single quotes for bash and zsh: ' becomes '\''.
std::string sh_quoted(std::string_view text) {
    std::string out = "'";
    for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// `text` in single quotes for fish, which escapes \ and ' inside them.
std::string fish_quoted(std::string_view text) {
    std::string out = "'";
    for (char c : text) {
        if (c == '\\' || c == '\'') out += '\\';
        out += c;
    }
    return out + "'";
}

// A bash or zsh function `name` with a case per command path in $1: for
// each command whose `field` is not empty, `answer` of it ("echo 'a b'",
// "reply=(...)"); `otherwise` for the rest.
template <class Field>
std::string case_function(const std::string& name, const std::vector<CommandDoc>& docs, Field field,
                          std::string_view answer_start, std::string_view answer_end,
                          std::string_view otherwise = "") {
    std::string out = name + "() {\n    case \"$1\" in\n";
    for (const CommandDoc& c : docs)
        if (std::string words = field(c); !words.empty())
            out += "        " + sh_quoted(c.path) + ") " + std::string(answer_start) + words +
                   std::string(answer_end) + " ;;\n";
    if (!otherwise.empty()) out += "        *) " + std::string(otherwise) + " ;;\n";
    return out + "    esac\n}\n\n";
}

// `field` as the words a bash function echoes.
template <class Field>
std::string sh_case_function(const std::string& name, const std::vector<CommandDoc>& docs,
                             Field field) {
    return case_function(
        name, docs,
        [&](const CommandDoc& c) { return field(c).empty() ? "" : sh_quoted(field(c)); }, "echo ",
        "");
}

// "'build'|'inspect'": the commands that take positional arguments (files).
std::string with_positionals(const std::vector<CommandDoc>& docs) {
    std::string out;
    for (const CommandDoc& c : docs)
        if (!c.positionals.empty()) out += (out.empty() ? "" : "|") + sh_quoted(c.path);
    return out.empty() ? "''" : out;
}

std::string header(std::string_view shell, std::string_view comment, std::string_view install) {
    std::string out;
    out += std::string(comment) + " " + std::string(shell) + " completion for bekc " + kVersion +
           ", generated by 'bekc completion " + std::string(shell) + "'\n";
    out += std::string(comment) + " from bekc's own command and option definitions. Install:\n";
    out += std::string(comment) + "   " + std::string(install) + "\n\n";
    return out;
}

std::string bash_script(const std::vector<CommandDoc>& docs) {
    std::string out = header(
        "bash", "#", "bekc completion bash > ~/.local/share/bash-completion/completions/bekc");
    out += sh_case_function("_bekc_subcommands", docs, subcommand_names);
    out += sh_case_function("_bekc_options", docs,
                            [](const CommandDoc& c) { return spellings(c, false); });
    out += sh_case_function("_bekc_value_options", docs,
                            [](const CommandDoc& c) { return spellings(c, true); });
    out +=
        "_bekc() {\n"
        "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"\" path=\"\" word i\n"
        "    (( COMP_CWORD > 1 )) && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
        "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        "        word=\"${COMP_WORDS[i]}\"\n"
        "        if [[ \" $(_bekc_value_options \"$path\") \" == *\" $word \"* ]]; then\n"
        "            ((i++))\n"
        "            [[ $i -eq $COMP_CWORD ]] && { COMPREPLY=($(compgen -f -- \"$cur\")); return; "
        "}\n"
        "            continue\n"
        "        fi\n"
        "        if [[ \" $(_bekc_subcommands \"$path\") \" == *\" $word \"* ]]; then\n"
        "            path=\"${path:+$path }$word\"\n"
        "        fi\n"
        "    done\n"
        "    if [[ \"$cur\" == -* ]]; then\n"
        "        COMPREPLY=($(compgen -W \"$(_bekc_options \"$path\")\" -- \"$cur\"))\n"
        "        return\n"
        "    fi\n"
        "    COMPREPLY=($(compgen -W \"$(_bekc_subcommands \"$path\")\" -- \"$cur\"))\n"
        "    case \"$path\" in\n"
        "        " +
        with_positionals(docs) +
        ") COMPREPLY+=($(compgen -f -- \"$cur\")) ;;\n"
        "    esac\n"
        "}\n\n"
        "complete -o filenames -F _bekc bekc\n";
    return out;
}

// zsh's "name:description" items of a command's options or subcommands.
std::string zsh_items(const std::vector<std::pair<std::string, std::string>>& items) {
    std::string out;
    for (const auto& [name, help] : items) out += " " + sh_quoted(name + ":" + help);
    return out;
}

// `items` (each quoted already) as the array a zsh function sets `reply` to.
template <class Items>
std::string zsh_case_function(const std::string& name, const std::vector<CommandDoc>& docs,
                              Items items) {
    return case_function(name, docs, items, "reply=(", " )", "reply=()");
}

std::string zsh_script(const std::vector<CommandDoc>& docs) {
    std::string out =
        "#compdef bekc\n" + header("zsh", "#", "bekc completion zsh > \"${fpath[1]}/_bekc\"");
    out += zsh_case_function("_bekc_commands", docs,
                             [](const CommandDoc& c) { return zsh_items(c.subcommands); });
    out += zsh_case_function("_bekc_options", docs, [](const CommandDoc& c) {
        std::vector<std::pair<std::string, std::string>> items;
        for (const OptionDoc& o : all_options(c))
            for (const auto& s : o.spellings) items.emplace_back(s, o.help);
        return zsh_items(items);
    });
    out += zsh_case_function("_bekc_value_options", docs, [](const CommandDoc& c) {
        std::string listed;
        for (const OptionDoc& o : all_options(c))
            if (!o.value.empty())
                for (const auto& s : o.spellings) listed += " " + sh_quoted(s);
        return listed;
    });
    out +=
        "_bekc() {\n"
        "    local path_=\"\" word i\n"
        "    local -a reply values commands\n"
        "    for ((i = 2; i < CURRENT; i++)); do\n"
        "        word=${words[i]}\n"
        "        _bekc_value_options \"$path_\"; values=($reply)\n"
        "        if (( ${values[(Ie)$word]} )); then\n"
        "            (( i++ ))\n"
        "            (( i == CURRENT )) && { _files; return; }\n"
        "            continue\n"
        "        fi\n"
        "        _bekc_commands \"$path_\"; commands=(${reply%%:*})\n"
        "        (( ${commands[(Ie)$word]} )) && path_=${path_:+$path_ }$word\n"
        "    done\n"
        "    if [[ ${words[CURRENT]} == -* ]]; then\n"
        "        _bekc_options \"$path_\"\n"
        "        _describe -t options option reply\n"
        "        return\n"
        "    fi\n"
        "    _bekc_commands \"$path_\"\n"
        "    (( ${#reply} )) && _describe -t commands command reply\n"
        "    case \"$path_\" in\n"
        "        " +
        with_positionals(docs) +
        ") _files ;;\n"
        "    esac\n"
        "}\n\n"
        "_bekc \"$@\"\n";
    return out;
}

std::string fish_script(const std::vector<CommandDoc>& docs) {
    std::string out =
        header("fish", "#", "bekc completion fish > ~/.config/fish/completions/bekc.fish");
    auto fish_switch = [&](const std::string& name, auto field) {
        std::string f = "function " + name + "\n    switch \"$argv[1]\"\n";
        for (const CommandDoc& c : docs)
            if (std::string words = field(c); !words.empty())
                f += "        case " + fish_quoted(c.path) + "\n            echo " +
                     fish_quoted(words) + "\n";
        return f + "    end\nend\n\n";
    };
    out += fish_switch("__bekc_subcommands", subcommand_names);
    out +=
        fish_switch("__bekc_value_options", [](const CommandDoc& c) { return spellings(c, true); });
    out +=
        "# The command path of the line so far: \"\", \"build\", \"cache ls\".\n"
        "function __bekc_path\n"
        "    set -l path ''\n"
        "    set -l skip 0\n"
        "    set -l words (commandline -opc)\n"
        "    set -e words[1]\n"
        "    for word in $words\n"
        "        if test $skip -eq 1\n"
        "            set skip 0\n"
        "        else if contains -- $word (string split ' ' -- (__bekc_value_options \"$path\"))\n"
        "            set skip 1\n"
        "        else if contains -- $word (string split ' ' -- (__bekc_subcommands \"$path\"))\n"
        "            set path (string trim -- \"$path $word\")\n"
        "        end\n"
        "    end\n"
        "    echo $path\n"
        "end\n\n"
        "function __bekc_at\n"
        "    set -l path (__bekc_path)\n"
        "    test \"$path\" = \"$argv[1]\"\n"
        "end\n\n"
        "complete -c bekc -f\n";
    for (const CommandDoc& c : docs) {
        std::string at = "complete -c bekc -n " + fish_quoted("__bekc_at " + fish_quoted(c.path));
        for (const auto& [name, help] : c.subcommands)
            out += at + " -a " + fish_quoted(name) + " -d " + fish_quoted(help) + "\n";
        for (const OptionDoc& o : all_options(c)) {
            out += at;
            for (const auto& s : o.spellings)
                out += s.starts_with("--") ? " -l " + s.substr(2) : " -s " + s.substr(1);
            out += (o.value.empty() ? "" : " -r -F") + std::string(" -d ") + fish_quoted(o.help) +
                   "\n";
        }
        if (!c.positionals.empty()) out += at + " -F\n";
    }
    return out;
}

// `text` safe in roff: backslashes, and a control character at a line's start.
std::string roff(std::string_view text, bool minus = false) {
    std::string out;
    for (char c : text) {
        if (c == '\\') {
            out += "\\e";
        } else if (c == '-' && minus) {
            out += "\\-";
        } else if (c == '"') {
            out += "\\(dq";
        } else {
            out += c;
        }
    }
    if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
    return out;
}

std::string man_options(const std::vector<OptionDoc>& options, bool positional) {
    std::string out;
    for (const OptionDoc& o : options) {
        std::string names;
        for (const auto& s : o.spellings) names += (names.empty() ? "" : ", ") + roff(s, true);
        out += ".TP\n";
        if (positional)
            out += ".I \"" + names + "\"\n";
        else if (o.value.empty())
            out += ".B \"" + names + "\"\n";
        else
            out += ".BI \"" + names + " \" " + roff(o.value) + "\n";
        out += roff(o.help) + "\n";
    }
    return out;
}

// "Exit codes: 0 success; 1 the kernel ...; 70 internal error." as a list.
std::string man_exit_codes(std::string footer) {
    std::string out;
    if (footer.starts_with("Exit codes: ")) footer = footer.substr(12);
    if (footer.ends_with(".")) footer.pop_back();
    for (size_t start = 0; start < footer.size();) {
        size_t end = footer.find("; ", start);
        std::string item = footer.substr(start, end == std::string::npos ? end : end - start);
        size_t space = item.find(' ');
        out += ".TP\n.B " + item.substr(0, space) + "\n" + roff(item.substr(space + 1)) + "\n";
        start = end == std::string::npos ? footer.size() : end + 2;
    }
    return out;
}

std::string man_page(const std::vector<CommandDoc>& docs, const std::string& footer) {
    const CommandDoc& root = docs.front();
    std::string out = ".TH BEKC 1 \"\" \"bekc " + std::string(kVersion) + "\" \"User Commands\"\n";
    out += ".SH NAME\nbekc \\- " + roff(root.help.substr(root.help.find(": ") + 2)) + "\n";
    out += ".SH SYNOPSIS\n.B bekc\n.I command\n.RI [ options ]\n";
    out += ".SH DESCRIPTION\n";
    out +=
        "This page is written by \\fBbekc man\\fR from bekc's own command and option "
        "definitions, as \\fBbekc completion\\fR writes shell completion; docs/cli.md in "
        "bekc's sources says more of each.\n";
    out += ".SH OPTIONS\n" + man_options(root.options, false);
    out += ".SH COMMANDS\n";
    for (size_t i = 1; i < docs.size(); ++i) {
        const CommandDoc& c = docs[i];
        std::string usage = "bekc " + c.path + (c.subcommands.empty() ? "" : " COMMAND") +
                            (c.options.empty() ? "" : " [OPTIONS]");
        for (const OptionDoc& p : c.positionals) usage += " " + p.spellings.front() + "...";
        out += ".SS \"" + roff(usage, true) + "\"\n" + roff(c.help) + "\n";
        out += man_options(c.positionals, true) + man_options(c.options, false);
        if (!c.inherited.empty())
            out += ".PP\nIt also takes the options of \\fBbekc " +
                   roff(c.path.substr(0, c.path.rfind(' ')), true) + "\\fR.\n";
    }
    out += ".SH \"EXIT STATUS\"\n" + man_exit_codes(footer);
    out += ".SH \"SEE ALSO\"\n.BR nvcc (1),\n.BR ccache (1)\n";
    return out;
}

}  // namespace

Action add_completion_command(CLI::App& app) {
    auto shell = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand(
        "completion",
        "Print a completion script for bash, zsh or fish, written from bekc's own commands and "
        "options");
    cmd->add_option("shell", *shell, "bash, zsh or fish")->required();
    CLI::App* root = &app;
    return [shell, root] {
        std::vector<CommandDoc> docs = command_docs(*root);
        std::string script;
        if (*shell == "bash") {
            script = bash_script(docs);
        } else if (*shell == "zsh") {
            script = zsh_script(docs);
        } else if (*shell == "fish") {
            script = fish_script(docs);
        } else {
            fatal(Error::make(ErrorKind::Usage,
                              "bekc completion knows bash, zsh or fish, not '" + *shell + "'"));
        }
        std::fputs(script.c_str(), stdout);
        return static_cast<int>(kExitOk);
    };
}

Action add_man_command(CLI::App& app) {
    app.add_subcommand("man",
                       "Print bekc's man page (roff), written from its own commands and options: "
                       "bekc man > ~/.local/share/man/man1/bekc.1");
    CLI::App* root = &app;
    return [root] {
        std::fputs(man_page(command_docs(*root), root->get_footer()).c_str(), stdout);
        return static_cast<int>(kExitOk);
    };
}

}  // namespace bekc::cli
