"""Message forms of real tools that the terminal classifier and its entity extractor read (issue 32,
item 2): npm's and Node's package names, the program a shell or make could not run, a bound port
as Python and Node print it, a pytest fixture, a daemon's socket; a carriage return in a command
name, Docker's exit 137, make's missing recipe program, GPU memory as CUDA and other frameworks
word it. Each string is written here in the tool's format (not copied from tests/data/real_logs).
"""

from __future__ import annotations

import pytest

from repairmem.classify.terminal import classify_terminal, extract_signatures

ERESOLVE = """npm ERR! code ERESOLVE
npm ERR! ERESOLVE unable to resolve dependency tree
npm ERR!
npm ERR! While resolving: dashboard@2.4.0
npm ERR! Found: vue@3.3.4
npm ERR! node_modules/vue
npm ERR!   vue@"^3.3.4" from the root project
npm ERR!
npm ERR! Could not resolve dependency:
npm ERR! peer vue@"^2.6.0" from vue-chartkick@0.6.1
npm ERR! node_modules/vue-chartkick
npm ERR!   vue-chartkick@"^0.6.1" from the root project
npm ERR!
npm ERR! Fix the upstream dependency conflict, or retry
npm ERR! this command with --force, or --legacy-peer-deps"""


@pytest.mark.parametrize("log, expected", [
    # npm: the conflicted package, without its version (another project has another version)
    (ERESOLVE, {"package:vue"}),
    ("npm error code ERESOLVE\nnpm error Conflicting peer dependency: @angular/core@16.2.12\n", {"package:@angular/core"}),
    ("npm ERR! code E404\nnpm ERR! 404  'left-padd@1.0.0' is not in this registry.", {"package:left-padd"}),
    ("npm ERR! code ETARGET\nnpm ERR! notarget No matching version found for @babel/core@^9.0.0.",
     {"package:@babel/core"}),
    # Node: a package is a module; a path is not a name
    ("Error: Cannot find module 'express'\nRequire stack:\n- /srv/api/index.js", {"module:express"}),
    ("Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'lodash-es' imported from /srv/api/a.mjs", {"module:lodash-es"}),
    ("Error: Cannot find module '@nestjs/core/router'", {"module:@nestjs/core"}),
    ("Error: Cannot find module '/srv/api/dist/main.js'", set()),
    # the program the shell, sudo or make could not run
    ("   -bash: rg: command not found", {"program:rg"}),
    ("sudo: ninja: command not found", {"program:ninja"}),
    ("cmake: command not found", {"program:cmake"}),
    ("zsh: command not found: poetry", {"program:poetry"}),          # zsh names it last, not "zsh"
    ("make: g++: No such file or directory\nmake: *** [Makefile:12: all] Error 127", {"program:g++"}),
    ("make: build.mk: No such file or directory", set()),             # a missing makefile is no program
    # ports: Python's address tuple, Node's listen error
    ("OSError: [Errno 13] error while attempting to bind on address ('127.0.0.1', 443): permission denied",
     {"port:443"}),
    ("Error: listen EADDRINUSE: address already in use :::8080", {"port:8080"}),
    ("Error: listen EACCES: permission denied 0.0.0.0:80", {"port:80"}),
    # a fixture pytest could not find, a daemon's socket
    ("E       fixture 'benchmark' not found", {"fixture:benchmark"}),
    ("Cannot connect to the Docker daemon at unix:///run/user/1000/docker.sock. Is the docker daemon running?",
     {"socket:/run/user/1000/docker.sock"}),
    ("failed to dial \"/run/containerd/containerd.sock\": dial unix /run/containerd/containerd.sock: connect: "
     "no such file or directory", {"socket:/run/containerd/containerd.sock"}),
])
def test_named_entities_of_real_tool_messages(log, expected):
    assert set(extract_signatures(log).entities) == expected


def test_two_eresolve_logs_of_one_conflict_name_the_same_package():
    other = ERESOLVE.replace("dashboard@2.4.0", "admin@0.1.0").replace("vue@3.3.4", "vue@3.4.1").replace(
        "vue-chartkick@0.6.1", "vue-slider@2.1.0").replace("vue-chartkick", "vue-slider")
    assert extract_signatures(ERESOLVE).entities == extract_signatures(other).entities == ("package:vue",)


@pytest.mark.parametrize("log, family, root", [
    # a carriage return in a command or interpreter name: CRLF line endings, whatever the symptom
    ("./deploy.sh: line 4: $'\\r': command not found\n./deploy.sh: line 9: cd: $'/opt/app\\r': No such file or "
     "directory", "syntax_error", "crlf_line_endings"),
    ("-bash: ./bootstrap.sh: /bin/bash^M: bad interpreter: No such file or directory",
     "syntax_error", "crlf_line_endings"),
    ("-bash: ./bootstrap.sh: /bin/bash: bad interpreter: No such file or directory", "command_not_found", "unknown"),
    # Docker's RUN step killed by SIGKILL (128 + 9)
    ("Step 7/12 : RUN npm run build\n ---> Running in 3f2a1b\nThe command '/bin/sh -c npm run build' returned a "
     "non-zero code: 137", "out_of_memory", "oom_killed"),
    ("The command '/bin/sh -c pip install -r requirements.txt' returned a non-zero code: 1", "unknown", "unknown"),
    # make could not execute the recipe's compiler
    ("cc -O2 -c -o main.o main.c\nmake: cc: No such file or directory\nmake: *** [<builtin>: main.o] Error 127",
     "command_not_found", "not_installed"),
    # GPU memory in other frameworks' words
    ("[09:12:01] src/storage/pooled_storage_manager.h:157: cudaMalloc retry failed: out of memory",
     "out_of_memory", "gpu_memory"),
    ("ResourceExhaustedError: Out of memory error on GPU 1. Cannot allocate 2.000000GB memory on GPU 1, "
     "available memory is only 512.000000MB.", "out_of_memory", "gpu_memory"),
    ("MemoryError: Cannot allocate 2.0 GiB of memory", "out_of_memory", "allocation_failed"),
])
def test_real_message_forms_get_their_cause(log, family, root):
    d = classify_terminal(log)
    assert (d.family, d.root_cause) == (family, root), d.rule
