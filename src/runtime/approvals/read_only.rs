//! Which commands only read (pure): what `on_write` lets run without
//! asking. A command is split as sh reads it into the simple commands it
//! joins with `|`, `&&`, `||` or `;`; each must be a program that only
//! reads (or one that reads unless an option makes it write or run
//! something else). Anything the split cannot see through (a redirection,
//! an expansion, a glob, a substitution) is not read-only.

/// Programs that only read (their output goes to the terminal), whatever
/// their arguments: files read, text printed, a hash computed.
const READS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "pwd",
    "grep",
    "egrep",
    "fgrep",
    "stat",
    "du",
    "df",
    "which",
    "echo",
    "printf",
    "true",
    "false",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "nl",
    "cut",
    "tr",
    "diff",
    "cmp",
    "comm",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "whoami",
    "uname",
    "id",
    "test",
    "[",
    "column",
    "fold",
    "rev",
    "seq",
    "jq",
];

/// Whether the simple command `words` only reads: a program of `READS`,
/// or one that reads unless an option makes it write or run something
/// (`find -delete`, `sort -o`, `rg --pre`, `file -C`, `date -s`), or git's
/// commands that look (`status`, `diff`, `log`, `show`, `blame`, …) without
/// an option that writes a file or runs a program (`--output`,
/// `--ext-diff`, `-O`).
fn reads_only(words: &[String]) -> bool {
    let Some((program, args)) = words.split_first() else {
        return false;
    };
    let has = |opts: &[&str]| flagged(args, opts);
    match program.as_str() {
        p if READS.contains(&p) => true,
        "rg" => !has(&["--pre", "--hostname-bin"]),
        "sort" => !has(&["-o", "--output", "--compress-program"]),
        "file" => !has(&["-C", "--compile"]),
        "date" => !has(&["-s", "--set"]),
        "find" => !has(&[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
            "-fls",
        ]),
        "git" => git_reads_only(args),
        _ => false,
    }
}

/// Whether `args` give any of `opts`: a long option alone, with `=`, or
/// abbreviated (`--outp` is `--output` to getopt); a one-letter option
/// anywhere in a cluster (`-uo` gives `-o`), value attached or not; a
/// longer single-dash word (`-delete`) whole.
fn flagged(args: &[String], opts: &[&str]) -> bool {
    args.iter().any(|a| {
        let name = a.split('=').next().unwrap_or(a);
        opts.iter().any(|o| match o.strip_prefix("--") {
            Some(_) => name.len() > 2 && name.starts_with("--") && o.starts_with(name),
            None if o.len() == 2 => {
                a.starts_with('-') && !a.starts_with("--") && a[1..].contains(&o[1..])
            }
            None => a == o,
        })
    })
}

/// `git SUBCOMMAND ARGS` that only looks. Options before the subcommand
/// (`-c` can set what git runs) are not read-only; nor is `branch` or
/// `remote` with anything but listing options (a name creates one).
fn git_reads_only(args: &[String]) -> bool {
    let Some((sub, rest)) = args.split_first() else {
        return false;
    };
    // A file written, or another program run: an external diff, a pager
    // for `grep`'s matches.
    let writes = flagged(
        rest,
        &[
            "--output",
            "--open-files-in-pager",
            "--ext-diff",
            "-o",
            "-O",
        ],
    );
    let lists = |allowed: &[&str]| rest.iter().all(|a| allowed.contains(&a.as_str()));
    match sub.as_str() {
        "status" | "diff" | "log" | "show" | "rev-parse" | "ls-files" | "blame" | "grep"
        | "shortlog" | "describe" | "rev-list" | "ls-tree" => !writes,
        "branch" => lists(&[
            "-a",
            "-r",
            "-v",
            "-vv",
            "-l",
            "--list",
            "--all",
            "--remotes",
            "--show-current",
            "--merged",
            "--no-merged",
        ]),
        "remote" => lists(&["-v", "--verbose"]),
        _ => false,
    }
}

/// `cmd` as the simple commands it joins with `|`, `&&`, `||` or `;`,
/// each as its words, when it holds nothing else of the shell's syntax
/// that could write or run something unseen: no redirection, command
/// substitution, background `&`, subshell or group, and no newline.
/// Quotes group words and a backslash escapes the next character, as sh
/// reads them. Any `$` outside single quotes (an expansion, whose value
/// is unseen here, in any shell's dialect), a backquote, an unquoted glob
/// or an escaped newline makes it `None` too.
fn simple_commands(cmd: &str) -> Option<Vec<Vec<String>>> {
    let mut commands = vec![Vec::new()];
    let (mut word, mut in_word) = (String::new(), false);
    let mut chars = cmd.chars().peekable();
    let end_word = |commands: &mut Vec<Vec<String>>, word: &mut String, in_word: &mut bool| {
        if std::mem::take(in_word) {
            if let Some(last) = commands.last_mut() {
                last.push(std::mem::take(word));
            }
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                // An escaped newline joins two lines into one word.
                match chars.next()? {
                    '\n' | '\r' => return None,
                    c => word.push(c),
                }
                in_word = true;
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '`' | '$' | '\n' | '\r' => return None,
                        '\\' => match chars.next()? {
                            '\n' | '\r' => return None,
                            c => word.push(c),
                        },
                        c => word.push(c),
                    }
                }
            }
            ' ' | '\t' => end_word(&mut commands, &mut word, &mut in_word),
            '|' | ';' | '&' => {
                end_word(&mut commands, &mut word, &mut in_word);
                let doubled = chars.peek() == Some(&c);
                match (c, doubled) {
                    ('&', false) => return None, // background
                    (';', true) => return None,  // `;;`: not a command list
                    (_, true) => {
                        chars.next();
                    }
                    _ => {}
                }
                if commands.last().is_none_or(Vec::is_empty) {
                    return None;
                }
                commands.push(Vec::new());
            }
            // Redirections, substitutions, subshells and groups; and any
            // expansion (`$x`, `$'…'`, `${x@P}`: a parameter's value is
            // unseen here), and globs, which a file named `--pre=sh`
            // turns into an option.
            '>' | '<' | '`' | '(' | ')' | '{' | '}' | '\n' | '\r' | '$' | '*' | '?' | '[' => {
                return None
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    end_word(&mut commands, &mut word, &mut in_word);
    match commands.iter().any(Vec::is_empty) {
        true => None,
        false => Some(commands),
    }
}

/// Whether `cmd` only reads: each of the simple commands it joins does.
pub fn read_only_command(cmd: &str) -> bool {
    simple_commands(cmd).is_some_and(|cmds| cmds.iter().all(|words| reads_only(words)))
}
