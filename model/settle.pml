/*
 * settle: the endpoint-record protocol AS THE CODE IMPLEMENTS IT, for SPIN.
 *
 * One key. Executors (activity attempts, activities/settled/run-settled.ts) race on its record
 * (activities/store/statements.ts, endpoint-store.ts); trajectory runs (workflows/settled-call.ts)
 * attempt, probe and wait for an operator; an operator (activities/settled/operator-settlement.ts)
 * settles; a lease sweeper (activities/settled/lease-sweeper.ts) turns lapsed leases IN_DOUBT;
 * retention purges. A DB clock ticks; every executor has a local clock that may lag it.
 * The effect is an increment of an external counter (`effects`).
 *
 * What is abstracted and why, the bounds, and how to read a counterexample: docs/model-checking.md.
 * Every `-D` switch below is listed there; `npm run model-check` runs the correct model and every
 * mutation (model/check.ts).
 */

/* ---------------------------------------------------------------- bounds */
#ifndef NEXEC
#define NEXEC 3          /* executor slots: activity attempts alive at once (live or zombie) */
#endif
#ifndef NRUNS
#define NRUNS 2          /* trajectory runs of the key: the first, then a second run of the same key */
#endif
#ifndef MAX_NOT_EXEC
#define MAX_NOT_EXEC 2   /* NOT_EXECUTED outcomes before a run gives up (the code: 5) */
#endif
#ifndef NOPS
#define NOPS 1           /* operator verdicts */
#endif
#ifndef REPROBES
#define REPROBES 1       /* timer-driven re-probes per run while waiting for an operator */
#endif
#ifndef MAX_ABANDON
#define MAX_ABANDON 2    /* live attempts a run abandons (heartbeat timeout) and retries; crashed ones: always */
#endif
#ifndef TOOL_FENCED
#define TOOL_FENCED 1    /* 1: file_edit (prepared edit, probe withdraws then looks); 0: bash_execute (start row fences) */
#endif

#define MAXGEN (NRUNS * (MAX_NOT_EXEC + MAX_ABANDON + NOPS + 2) + 1)
#define NONE 255

/* record states; UNSEEN is the absence of a row */
#define UNSEEN 0
#define IN_FLIGHT 1
#define COMPLETED 2
#define IN_DOUBT 3
#define NOT_EXECUTED 4

/* what one attempt reports to its run (CallOutcome) */
#define O_NONE 0
#define O_COMPLETED 1
#define O_BUSY 2
#define O_RELEASED 3
#define O_IN_DOUBT 4
#define O_DENIED 5      /* the worker's policy or the capability refused the attempt before any claim */

/* where a run stands */
#define W_IDLE 0
#define W_RUNNING 1
#define W_COMPLETED 2
#define W_GAVE_UP 3
#define W_WAIT_OP 4
#define W_TERMINATED 5
#define W_DENIED 6      /* ended: the call reported refused (the record, if any, settled) */

/* who takes a record out of IN_DOUBT */
#define A_EXEC 1
#define A_PROBE 2
#define A_OPERATOR 3
#define A_CLAIM 4
#define A_RETENTION 5

/* ---------------------------------------------------------------- the record (one row) */
byte rstate = UNSEEN;
byte rgen = 0;          /* generation: the fencing token */
bit rexpired = 0;       /* IN_FLIGHT and lease_until <= now() on the database clock */
byte rholder = NONE;    /* the executor slot holding the lease (IN_FLIGHT only) */
bit rintent = 0;        /* the claim recorded an intent (the plan proceeded) */

/* ---------------------------------------------------------------- the world */
byte effects = 0;       /* the external effect: how many times it happened */
byte effgen = 0;        /* the generation whose executor applied it */
bit tmp[MAXGEN + 1];    /* file_edit: generation g's prepared temporary file exists */
#if !TOOL_FENCED
/* bash_execute: the start row of generation g in the worker's database (settle_shell_runs), inserted
   if absent by the executor (STARTED) or the probe (FENCED), never changed; no sandbox reaches it */
#define C_NONE 0
#define C_STARTED 1
#define C_FENCED 2
byte cell[MAXGEN + 1];
/* bash_execute: generation g's sealed exit marker in its run directory (the pid and output files
   beside it tell a probe nothing it may rely on, so they are left out). An escaped command may
   delete it at any step (Adversary), never forge it: the seal key is in the start row */
bit exitmark[MAXGEN + 1];
byte nmarks = 0;        /* how many exist (follows from the array: adds no state) */
#endif

/* ---------------------------------------------------------------- ghosts (properties only) */
byte doubt_gen = 0;     /* the generation that went IN_DOUBT */
bit live_gen[MAXGEN + 1]; /* the executor of generation g is alive and may still act */

/* ---------------------------------------------------------------- executors */
bit start[NEXEC];
bit used[NEXEC];
byte owner[NEXEC];      /* the run waiting for this attempt; NONE: abandoned (a zombie if alive) */
bit keeper[NEXEC];      /* LeaseKeeper running */
bit lost[NEXEC];        /* LeaseKeeper.lost */
bit young[NEXEC];       /* keeper running and the local age of its lease <= leaseMs - marginMs */

/* ---------------------------------------------------------------- runs */
byte wf[NRUNS];
byte rout[NRUNS];       /* outcome of the run's current attempt */
byte routgen[NRUNS];    /* the generation the outcome names */
byte routst[NRUNS];     /* O_DENIED: the record's state the refusing attempt read (UNSEEN: none) */
bit awaiting[NRUNS];    /* the key is in awaitingOperator (the settleCall update is accepted) */
byte vgen[NRUNS];       /* an operator verdict recorded for (key, generation), not yet taken */
byte vstate[NRUNS];
byte ops = 0;


#if NEXEC == 3
#define ANY_USED (used[0] || used[1] || used[2])
#define FREE_SLOT (!used[0] || !used[1] || !used[2])
#elif NEXEC == 4
#define ANY_USED (used[0] || used[1] || used[2] || used[3])
#define FREE_SLOT (!used[0] || !used[1] || !used[2] || !used[3])
#else
#error "NEXEC must be 3 or 4"
#endif

/* ---------------------------------------------------------------- properties */
/* P1 the external effect happens at most once per key */
#define P1 (effects <= 1)
/* P2 a COMPLETED record: the effect happened exactly once, by the generation the record names */
#define P2 (rstate != COMPLETED || (effects == 1 && effgen == rgen))
/* P3 an effect that happened is never recorded NOT_EXECUTED, nor followed by a new generation */
#define P3 (effects == 0 || rstate == UNSEEN || (rstate != NOT_EXECUTED && rgen == effgen))

inline enter_doubt(g) { doubt_gen = g }

/* P4 IN_DOUBT is left only by a probe or an operator acting on that generation, or by the
   executor of that generation (late completion, late release) */
inline leave_doubt(actor, g) {
  if
  :: !((actor == A_PROBE || actor == A_OPERATOR || actor == A_EXEC) && g == doubt_gen) ->
     printf("PROPERTY VIOLATED: P4 IN_DOUBT left by actor %d for generation %d (doubt is generation %d)\n", actor, g, doubt_gen);
     assert(false)
  :: else
  fi;
  doubt_gen = 0
}

/* ---------------------------------------------------------------- executors (runSettled) */

/* LeaseKeeper.renew: never after a local lapse; renewStatement is fenced by (generation, IN_FLIGHT)
   only, not by the lease. Send and execution in one step: a delayed renewal only lengthens the DB
   lease beyond what the executor counts (it counts from the send). */
inline renew() {
  atomic {
    keeper[e] && !lost[e] ->
    if
#ifndef MUT_RENEW_AFTER_LAPSE
    :: !young[e] -> lost[e] = 1
    :: else ->
#else
    :: true ->
#endif
#ifdef MUT_RENEW_NO_GEN
       if :: rstate == IN_FLIGHT -> rexpired = 0; young[e] = 1 :: else -> lost[e] = 1 fi
#else
       if :: rstate == IN_FLIGHT && rgen == g -> rexpired = 0; young[e] = 1 :: else -> lost[e] = 1 fi
#endif
    fi
  }
}

inline stop_keeper() { keeper[e] = 0; lost[e] = 0; young[e] = 0 }

/* a step with the lease keeper's renewal as an alternative; a pause (SIGSTOP) is simply not
   being scheduled while the clock ticks; a crash (SIGKILL) is an alternative at CRASH points */
#define BG :: renew()
#define CRASH :: goto crashed
/* bash_execute: the sealed exit marker the executor writes after the command (a marker never
   written, its write failed, and one the adversary deleted look the same: it is written here) */
#if TOOL_FENCED
#define MARKS skip
#else
#define MARKS exitmark[g] = 1; nmarks++
#endif

active [NEXEC] proctype Exec() {
  byte e = _pid;        /* Exec is declared first: pids 0 .. NEXEC-1 */
  byte g = 0;           /* the generation this executor holds */
  bit planok = 0;
  bit nx = 0;           /* NoEffect (incl. LeaseLost) */
  bit exc = 0;          /* an exception other than NoEffect */
  byte o = O_NONE;
  byte og = 0;          /* the generation the outcome names */
  byte ost = UNSEEN;    /* O_DENIED: the record's state read after the refusal */
  byte got = 0;

end_idle:
  start[e];
  atomic {
    start[e] = 0;
    /* plan: read-only, before the claim; proceeds with an intent, or fails having touched nothing */
#ifdef PLAN_FAILS
    if :: planok = 1 :: planok = 0 fi
#else
    planok = 1
#endif
  }
#ifdef DENIALS
  /* checkAccess: this worker may refuse the attempt (it holds capability keys, the trajectory has
     no capability; a key rotated) before any claim; the activity then reads the key's record */
  if
  :: skip
  :: atomic { o = O_DENIED; og = rgen; ost = rstate }; goto finish
  fi;
#endif

claim:
  /* claimStatement: one atomic INSERT ... ON CONFLICT DO UPDATE ... WHERE */
  do
  :: atomic {
       if
       :: rstate == UNSEEN -> rstate = IN_FLIGHT; rgen = 1; got = 1
       :: rstate == NOT_EXECUTED -> rstate = IN_FLIGHT; rgen++; got = 1
       :: rstate == IN_FLIGHT && rexpired -> rstate = IN_DOUBT; rexpired = 0; rholder = NONE; enter_doubt(rgen); got = 2
#ifdef MUT_CLAIM_TAKES_DOUBT
       :: rstate == IN_DOUBT -> leave_doubt(A_CLAIM, rgen); rstate = IN_FLIGHT; rgen++; got = 1
#endif
       :: else -> got = 0
       fi;
       if
       :: got == 1 ->
          assert(rgen < MAXGEN);
          g = rgen; rexpired = 0; rholder = e; rintent = planok; live_gen[g] = 1;
          keeper[e] = planok; lost[e] = 0; young[e] = planok
       :: got == 2 -> o = O_IN_DOUBT; og = rgen
       :: else
       fi
     };
     break
  od;
  if
  :: got == 2 -> goto finish
  :: got == 0 ->
     /* not transitioned: read the row in a second statement */
     do
     :: atomic {
          if
          :: rstate == COMPLETED -> o = O_COMPLETED
          :: rstate == IN_DOUBT -> o = O_IN_DOUBT
          :: rstate == IN_FLIGHT -> o = O_BUSY
          :: else -> o = O_NONE   /* NOT_EXECUTED meanwhile, or purged: claim again */
          fi;
          og = rgen; got = 0
        };
        break
     od;
     if :: o == O_NONE -> goto claim :: else -> goto finish fi
  :: else
  fi;
  got = 0;

  if :: !planok -> goto release :: else fi;   /* planning failed: release, nothing was touched */

#if TOOL_FENCED
  /* file_edit: write the temporary file (named in the intent) */
  do
  BG
  :: atomic { tmp[g] = 1 }; break
  od;
#endif

  /* right before the effect: the tool re-checks its pre-state (NoEffect), then assertLeaseHeld() */
  do
  BG CRASH
  :: atomic {
       if
       :: nx = 1                                     /* pre-state changed: NoEffect */
       :: skip
       fi;
#ifndef MUT_SKIP_LOCAL_LEASE_CHECK
       if :: lost[e] || !young[e] -> nx = 1 :: else fi;   /* LeaseLost */
#endif
       if :: nx -> tmp[g] = 0; stop_keeper() :: else fi
     };
     break
  od;
  if :: nx -> goto release :: else fi;

#if !TOOL_FENCED
  /* ledger.start: insert the STARTED row if absent; a probe's FENCED row won: NoEffect, not started */
  do
  BG CRASH
  :: atomic {
       if
       :: cell[g] == C_NONE -> cell[g] = C_STARTED
       :: else -> nx = 1; stop_keeper()
       fi
     };
     break
  od;
  if :: nx -> goto release :: else fi;
#endif

  /* the effect (file_edit: the rename of the temporary file; bash_execute: the command) */
  do
  BG
  :: atomic {
#if TOOL_FENCED
       if :: !tmp[g] -> nx = 1 :: else fi;   /* ENOENT: a probe withdrew the prepared edit */
#endif
       if
       :: nx
       :: !nx -> effects++; effgen = g; tmp[g] = 0; MARKS            /* done, returns a result */
       :: !nx -> effects++; effgen = g; tmp[g] = 0; MARKS; exc = 1   /* done, then an exception */
       :: !nx -> exc = 1                                             /* an exception, nothing done */
#if !TOOL_FENCED
       :: !nx -> nx = 1          /* started, then the sandbox refused before the spawn: NoEffect */
#endif
       fi;
       stop_keeper()    /* lease.stop() once execute returned or threw */
     };
     break
  od;
  if
  :: nx -> goto release
#ifdef MUT_RELEASE_ON_EXCEPTION
  :: exc -> goto release
#else
  :: exc -> goto mark_in_doubt
#endif
  :: else
  fi;

  /* complete: fenced by generation, from IN_FLIGHT or (late completion) IN_DOUBT */
  do
  :: goto crashed
  :: atomic {
       if
#ifdef MUT_UNFENCED_COMPLETE
       :: rstate == IN_FLIGHT || rstate == IN_DOUBT ->
#else
       :: (rstate == IN_FLIGHT || rstate == IN_DOUBT) && rgen == g ->
#endif
          if :: rstate == IN_DOUBT -> leave_doubt(A_EXEC, g) :: else fi;
          rstate = COMPLETED; rexpired = 0; rholder = NONE; o = O_COMPLETED; og = g
       :: else -> o = O_NONE
       fi
     };
     break
  od;
  goto written;

mark_in_doubt:
  do
  :: goto crashed
  :: atomic {
       if
       :: rstate == IN_FLIGHT && rgen == g -> rstate = IN_DOUBT; rexpired = 0; rholder = NONE; enter_doubt(g); o = O_IN_DOUBT; og = g
       :: else -> o = O_NONE
       fi
     };
     break
  od;
  goto written;

release:
  /* releaseNoEffect: fenced, from IN_FLIGHT or (late release) IN_DOUBT */
  do
  :: goto crashed
  :: atomic {
       stop_keeper();
       if
#ifdef MUT_UNFENCED_RELEASE
       :: rstate == IN_FLIGHT || rstate == IN_DOUBT ->
#else
       :: (rstate == IN_FLIGHT || rstate == IN_DOUBT) && rgen == g ->
#endif
          if :: rstate == IN_DOUBT -> leave_doubt(A_EXEC, g) :: else fi;
          rstate = NOT_EXECUTED; rexpired = 0; rholder = NONE; o = O_RELEASED; og = g
       :: else -> o = O_NONE
       fi
     };
     break
  od;

written:
  if
  :: o == O_NONE ->
     /* fenced out: the record is the truth (outcomeOf) */
     do
     :: atomic {
          if
          :: rstate == COMPLETED -> o = O_COMPLETED
          :: rstate == IN_FLIGHT -> o = O_BUSY
          :: rstate == IN_DOUBT -> o = O_IN_DOUBT
          :: else -> o = O_RELEASED
          fi;
          og = rgen
        };
        break
     od
  :: else
  fi;

finish:
  atomic {
    if :: owner[e] != NONE -> rout[owner[e]] = o; routgen[owner[e]] = og; routst[owner[e]] = ost :: else fi;
    if :: g > 0 -> live_gen[g] = 0 :: else fi;
    stop_keeper();
    used[e] = 0; owner[e] = NONE;
    g = 0; planok = 0; nx = 0; exc = 0; o = O_NONE; og = 0; ost = UNSEEN; got = 0
  };
  goto end_idle;

crashed:
  atomic {
    if :: g > 0 -> live_gen[g] = 0 :: else fi;
    stop_keeper();
    used[e] = 0; owner[e] = NONE;     /* its run notices by the heartbeat timeout */
    g = 0; planok = 0; nx = 0; exc = 0; o = O_NONE; og = 0; got = 0
  };
  goto end_idle
}

/* ---------------------------------------------------------------- trajectory runs (SettledCall) */

/* the operator's verdict reaches a run through the settleCall update, kept by (key, generation) */
inline deliver(gen, st) {
  for (i : 0 .. NRUNS - 1) {
    if :: awaiting[i] -> vgen[i] = gen; vstate[i] = st :: else fi
  }
  i = 0
}

active [NRUNS] proctype Run() {
  byte r = _pid - NEXEC;
  byte x = NONE;        /* slot of the current attempt */
  byte o, pg, st, v;
  byte dst;             /* O_DENIED: the record state the refusing attempt read */
  byte ngen;            /* the generation a NOT_EXECUTED the run counts was about */
  bit pint;
  byte notexec = 0, reprobes = 0, abandons = 0;

  /* the second run of the key starts once the first has ended */
  if
  :: r == 0 -> wf[r] = W_RUNNING
  :: r > 0 -> atomic { (wf[r - 1] == W_COMPLETED || wf[r - 1] == W_GAVE_UP || wf[r - 1] == W_TERMINATED || wf[r - 1] == W_DENIED) -> wf[r] = W_RUNNING }
  fi;

attempt:
  atomic {
    FREE_SLOT ->
    if
    :: !used[0] -> x = 0
    :: else -> if :: !used[1] -> x = 1 :: else ->
#if NEXEC == 4
               if :: !used[2] -> x = 2 :: else -> x = 3 fi
#else
               x = 2
#endif
               fi
    fi;
    used[x] = 1; owner[x] = r; rout[r] = O_NONE; start[x] = 1
  };
  do
  :: atomic { rout[r] != O_NONE -> o = rout[r]; ngen = routgen[r]; dst = routst[r]; rout[r] = O_NONE; routgen[r] = 0; routst[r] = UNSEEN; x = NONE }; break
  :: atomic {
       /* heartbeat timeout (the worker died or is paused): Temporal retries the activity; the
          abandoned attempt, if alive, runs on as a zombie whose outcome nobody reads */
       rout[r] == O_NONE && (owner[x] != r || abandons < MAX_ABANDON) ->
       if :: owner[x] == r -> abandons++ :: else fi;
       if :: owner[x] == r -> owner[x] = NONE :: else fi;
       x = NONE
     };
     goto attempt
  :: r == 0 && rout[r] == O_NONE -> goto terminated    /* the first run is terminated by a human */
  od;

  if
  :: o == O_COMPLETED -> goto completed
  :: o == O_BUSY -> goto attempt
  :: o == O_RELEASED -> goto not_executed
  :: o == O_DENIED -> goto denied
  :: o == O_IN_DOUBT
  fi;

probe:
  /* probeToolCall: read the record; probe the world only if it is IN_DOUBT */
  atomic {
    /* P6 retention never purges a record a run still works on */
    if
    :: rstate == UNSEEN -> printf("PROPERTY VIOLATED: P6 run %d probes a purged record\n", r); assert(false)
    :: else
    fi;
    pg = rgen; st = rstate; pint = rintent
  };
  if
  :: st == IN_DOUBT ->
     if
     :: !pint -> v = NOT_EXECUTED   /* no intent: the effect never started */
     :: else ->
#if TOOL_FENCED
#ifndef MUT_PROBE_NO_FENCE
        tmp[pg] = 0;                /* withdraw the prepared edit first */
#endif
        atomic {
          if
          :: effects > 0 -> v = COMPLETED
          :: effects == 0 -> v = NOT_EXECUTED
          :: v = IN_DOUBT          /* the file matches neither hash: unknown */
#ifdef PROBE_FALSE_NEGATIVE
          :: effects > 0 -> v = NOT_EXECUTED
#endif
          fi
        }
#else
#ifndef MUT_PROBE_TRUSTS_FILES
        /* bash_execute: ledger.fence inserts FENCED if absent (then the row that won is read: rows
           never change); a FENCED row: the command never started and never will */
        atomic {
          if :: cell[pg] == C_NONE -> cell[pg] = C_FENCED :: else fi;
          if :: cell[pg] == C_FENCED -> v = NOT_EXECUTED :: else -> v = IN_DOUBT fi
        };
        /* STARTED: only a sealed exit marker says applied; its absence proves nothing */
        atomic { if :: v == IN_DOUBT && exitmark[pg] -> v = COMPLETED :: else fi }
#else
        /* the run directory taken as the truth: no marker there read as never started */
        atomic { if :: exitmark[pg] -> v = COMPLETED :: else -> v = NOT_EXECUTED fi }
#endif
#endif
     fi;
     /* applyProbe: settle fenced by the generation read */
     atomic {
       if
       :: v != IN_DOUBT && rstate == IN_DOUBT && rgen == pg ->
          leave_doubt(A_PROBE, pg); rstate = v; st = v
       :: v != IN_DOUBT && !(rstate == IN_DOUBT && rgen == pg) -> st = rstate
       :: else -> st = IN_DOUBT
       fi;
       v = 0; pint = 0
     }
  :: else
  fi;

  if
  :: st == IN_DOUBT ->
#ifdef MUT_GIVE_UP_ON_UNKNOWN
     ngen = pg; goto not_executed;
#endif
     goto wait_operator
  :: st == COMPLETED -> goto attempt       /* the next attempt replays the settled result */
  :: st == NOT_EXECUTED -> ngen = pg; goto not_executed
  :: else -> goto attempt
  fi;

wait_operator:
  atomic { awaiting[r] = 1; wf[r] = W_WAIT_OP };
end_wait_operator:
  do
#ifdef MUT_VERDICT_ANY_GEN
  :: atomic { vgen[r] != 0 ->
#else
  :: atomic { vgen[r] == pg ->
#endif
       st = vstate[r]; vgen[r] = 0; vstate[r] = 0; awaiting[r] = 0; wf[r] = W_RUNNING };
     if :: st == NOT_EXECUTED -> ngen = pg; goto not_executed :: else -> goto attempt fi
  :: atomic { reprobes < REPROBES -> reprobes++; wf[r] = W_RUNNING }; goto probe
  :: atomic { (rstate != IN_DOUBT || rgen != pg) -> wf[r] = W_RUNNING }; goto probe
  :: r == 0 -> goto terminated
  od;

not_executed:
  /* P5 a call is never counted (or reported) not executed while its record is IN_DOUBT */
  if
  :: rstate == IN_DOUBT && rgen == ngen ->
     printf("PROPERTY VIOLATED: P5 run %d counts NOT_EXECUTED while generation %d is IN_DOUBT\n", r, ngen); assert(false)
  :: else
  fi;
  ngen = 0;
  notexec++;
  if
  :: notexec >= MAX_NOT_EXEC -> wf[r] = W_GAVE_UP; goto end_run
  :: else -> goto attempt
  fi;

denied:
  /* SettledCall.deniedWithRecord: a refusal does not end a call whose record's effect is unknown */
#ifndef MUT_DENIED_ENDS
  if
  :: dst == IN_FLIGHT || dst == IN_DOUBT ->
     /* wait (the watch) until the record leaves that state at that generation: its holder finishes,
        the sweeper turns its lapsed lease IN_DOUBT, an operator or a late completion settles it;
        then attempt again */
     pg = ngen;
     atomic { wf[r] = W_WAIT_OP };
end_wait_settled:
     do
     :: atomic { !(rstate == dst && rgen == pg) -> wf[r] = W_RUNNING }; break
     :: r == 0 -> goto terminated
     od;
     pg = 0; dst = UNSEEN; ngen = 0;
     goto attempt
  :: else
  fi;
#endif
  /* P5 a call is never reported refused while the record of an earlier attempt is in doubt */
  if
  :: (rstate == IN_FLIGHT || rstate == IN_DOUBT) && rgen == ngen ->
     printf("PROPERTY VIOLATED: P5 run %d reports the call denied while generation %d is %d\n", r, ngen, rstate); assert(false)
  :: else
  fi;
  wf[r] = W_DENIED;
  goto end_run;

completed:
  wf[r] = W_COMPLETED;
  /* a run reports completed only for an effect that happened exactly once */
  if
  :: !(effects == 1) -> printf("PROPERTY VIOLATED: P5 run %d completed with effects %d\n", r, effects); assert(false)
  :: else
  fi;
  goto end_run;

terminated:
  atomic {
    wf[r] = W_TERMINATED; awaiting[r] = 0;
    if :: x != NONE -> if :: owner[x] == r -> owner[x] = NONE :: else fi :: else fi;
    x = NONE
  };

end_run:
  skip
}

/* NO_P1 / NO_P2 / NO_P3 leave a property unchecked, so that a mutation shows what it breaks further on */
active proctype Safety() {
end_watch:
  if
#ifndef NO_P1
  :: !P1 -> printf("PROPERTY VIOLATED: P1 effect applied %d times\n", effects); assert(false)
#endif
#ifndef NO_P2
  :: !P2 -> printf("PROPERTY VIOLATED: P2 COMPLETED generation %d, effects %d by generation %d\n", rgen, effects, effgen); assert(false)
#endif
#ifndef NO_P3
  :: !P3 -> printf("PROPERTY VIOLATED: P3 effect by generation %d, record state %d generation %d\n", effgen, rstate, rgen); assert(false)
#endif
  fi
}

#if !TOOL_FENCED
/* ---------------------------------------------------------------- the escaped command (bash_execute) */
/* A sandboxed command that escaped its run directory's protection deletes any generation's exit
   marker at any step (an altered one fails its seal: the same as deleted); it cannot reach the
   database's start rows, and it cannot forge a sealed marker (the seal key is in the start row). */
active proctype Adversary() {
  byte a;
end_adversary:
  do
  :: atomic {
       nmarks > 0 ->    /* blocked when there is nothing to delete, so that quiescence is reached */
       a = 1;
       do
       :: a < MAXGEN - 1 -> a++
       :: break
       od;
       if :: exitmark[a] -> exitmark[a] = 0; nmarks-- :: else fi;
       a = 0
     }
  od
}
#endif

/* ---------------------------------------------------------------- time */
/* Time is abstracted to the order of two kinds of events (docs/model-checking.md#time):
   - an executor's local monotonic clock passes leaseMs - marginMs since the last renewal it sent
     (young -> old): from then on assertLeaseHeld() throws LeaseLost and the keeper never renews;
   - the lease lapses on the database clock (rexpired): lease_until <= now().
   Drift bounded by the margin means: the database lease of a holder whose keeper runs lapses only
   after the holder's local clock has passed leaseMs - marginMs. Anything else is free: any pause,
   any order, any delay. MUT_DRIFT_EXCEEDS_MARGIN drops the constraint. */
#if NEXEC == 3
#define AGE_LOCAL :: atomic { young[0] -> young[0] = 0 } :: atomic { young[1] -> young[1] = 0 } :: atomic { young[2] -> young[2] = 0 }
#else
#define AGE_LOCAL :: atomic { young[0] -> young[0] = 0 } :: atomic { young[1] -> young[1] = 0 } :: atomic { young[2] -> young[2] = 0 } :: atomic { young[3] -> young[3] = 0 }
#endif
active proctype Clock() {
end_clock:
  do
  AGE_LOCAL
#ifdef MUT_DRIFT_EXCEEDS_MARGIN
  :: atomic { rstate == IN_FLIGHT && !rexpired -> rexpired = 1 }
#else
  :: atomic { rstate == IN_FLIGHT && !rexpired && !young[rholder] -> rexpired = 1 }
#endif
  od
}

/* ---------------------------------------------------------------- the operator (settle resolve) */
active proctype Operator() {
  byte og, ov, i;
end_operator:
  do
  :: atomic {
       /* looks: the record IN_DOUBT at og, its executor gone (a careful operator), the world's facts */
#ifdef OPERATOR_CARELESS
       ops < NOPS && rstate == IN_DOUBT ->
#else
       ops < NOPS && rstate == IN_DOUBT && !live_gen[rgen] ->
#endif
       ops++; og = rgen;
       if :: effects > 0 -> ov = COMPLETED :: else -> ov = NOT_EXECUTED fi
     };
     /* ... some time later, settleByOperator writes the verdict */
     atomic {
       if
#ifdef MUT_OPERATOR_UNFENCED
       :: rstate == IN_DOUBT ->
#else
       :: rstate == IN_DOUBT && rgen == og ->
#endif
          leave_doubt(A_OPERATOR, og); rstate = ov; deliver(rgen, ov)
       :: else
       fi;
       og = 0; ov = 0
     }
  od
}

/* ---------------------------------------------------------------- retention (purgeSettled) */
active proctype Retention() {
  byte i;
end_retention:
  atomic {
#ifdef MUT_PURGE_IN_DOUBT
    (rstate == COMPLETED || rstate == NOT_EXECUTED || rstate == IN_DOUBT) &&
#else
    (rstate == COMPLETED || rstate == NOT_EXECUTED) &&
#endif
#ifndef MUT_EAGER_RETENTION
    /* the window is longer than any run of the key and any executor's pause */
    wf[NRUNS - 1] != W_IDLE && wf[NRUNS - 1] != W_RUNNING && wf[NRUNS - 1] != W_WAIT_OP && !ANY_USED &&
#endif
    true ->
    if :: rstate == IN_DOUBT -> leave_doubt(A_RETENTION, rgen) :: else fi;
    rstate = UNSEEN; rgen = 0; rintent = 0;
#if !TOOL_FENCED
    /* the key's start rows go with it; a marker left behind no longer verifies (its seal key was in
       the purged row), which is the same as deleted */
    for (i : 0 .. MAXGEN) { cell[i] = C_NONE; exitmark[i] = 0 }
    nmarks = 0;
#endif
    i = 0
  }
}

/* ---------------------------------------------------------------- the lease sweeper (LeaseSweeper) */
/* Every worker sweeps: an IN_FLIGHT record whose lease lapsed on the database clock turns IN_DOUBT,
   whether or not anything claims the key again (sweepStatement: the claim's transition, one atomic
   statement; its grace period is any delay after the lapse). */
active proctype Sweeper() {
end_sweep:
  do
#ifndef MUT_NO_SWEEPER
  :: atomic { rstate == IN_FLIGHT && rexpired -> rstate = IN_DOUBT; rexpired = 0; rholder = NONE; enter_doubt(rgen) }
#else
  :: false
#endif
  od
}

/* ---------------------------------------------------------------- no silent end */
/* When nothing can move any more, every run has ended COMPLETED, gave up NOT_EXECUTED, or waits
   for an operator on a record that is really IN_DOUBT. (Processes stuck anywhere else are
   reported by SPIN as invalid end states.) */
active proctype Final() {
  byte i;
  timeout ->
  /* P7 every lapsed lease of a dead holder reaches IN_DOUBT or a settled state: when nothing can
     move, every executor is idle (a live one can always move), so its lease has lapsed */
  if
  :: rstate == IN_FLIGHT -> printf("PROPERTY VIOLATED: P7 the record stays IN_FLIGHT (generation %d) with its holder gone\n", rgen); assert(false)
  :: else
  fi;
  for (i : 0 .. NRUNS - 1) {
    if
    :: wf[i] == W_WAIT_OP && !(rstate == IN_DOUBT) ->
       printf("PROPERTY VIOLATED: P5 run %d waits for an operator but the record is %d\n", i, rstate); assert(false)
    :: wf[i] == W_COMPLETED && !(effects == 1) ->
       printf("PROPERTY VIOLATED: P5 run %d completed, effects %d\n", i, effects); assert(false)
    :: else
    fi
  }
#ifdef STRICT_KEY_END
  /* key level: nothing is left IN_DOUBT or IN_FLIGHT without a run waiting for it (see the
     documented finding: an abandoned attempt may claim the key after its run gave up) */
  if
  :: (rstate == IN_DOUBT || rstate == IN_FLIGHT) && wf[NRUNS - 1] != W_WAIT_OP ->
     printf("PROPERTY VIOLATED: P5 the record is %d and no run waits for it\n", rstate); assert(false)
  :: else
  fi
#endif
}
