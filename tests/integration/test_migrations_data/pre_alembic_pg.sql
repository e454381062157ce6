--
-- PostgreSQL database dump
--

\restrict fgVrUMy8xZPtefM187xXx8oX9QRaxJRnJPAWicf4e9VHDt8kladTy6MyHPKpNJT

-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: checkpoints; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.checkpoints (
    uuid character varying(64) NOT NULL,
    trial_id integer NOT NULL,
    experiment_id integer NOT NULL,
    run_id integer NOT NULL,
    steps_completed integer NOT NULL,
    metadata json NOT NULL,
    resources json NOT NULL,
    storage json NOT NULL,
    state character varying(32) NOT NULL,
    reported_at double precision NOT NULL
);


--
-- Name: experiments; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.experiments (
    id integer NOT NULL,
    name character varying(256) NOT NULL,
    description text,
    labels json NOT NULL,
    config json NOT NULL,
    model_def bytea,
    state character varying(32) NOT NULL,
    archived boolean NOT NULL,
    unmanaged boolean NOT NULL,
    progress double precision NOT NULL,
    searcher_state json,
    error text,
    created_at double precision NOT NULL,
    ended_at double precision
);


--
-- Name: experiments_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.experiments_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: experiments_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.experiments_id_seq OWNED BY public.experiments.id;


--
-- Name: logs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.logs (
    id integer NOT NULL,
    trial_id integer NOT NULL,
    run_id integer NOT NULL,
    line text NOT NULL,
    ts double precision NOT NULL
);


--
-- Name: logs_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.logs_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: logs_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.logs_id_seq OWNED BY public.logs.id;


--
-- Name: metric_batches; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.metric_batches (
    trial_id integer NOT NULL,
    run_id integer NOT NULL,
    sender character varying(32) NOT NULL,
    seq integer NOT NULL,
    stored_at double precision NOT NULL
);


--
-- Name: metrics; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.metrics (
    id integer NOT NULL,
    trial_id integer NOT NULL,
    run_id integer NOT NULL,
    "group" character varying(64) NOT NULL,
    steps_completed integer NOT NULL,
    "values" json NOT NULL,
    batch_metrics json,
    reported_at double precision NOT NULL
);


--
-- Name: metrics_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.metrics_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: metrics_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.metrics_id_seq OWNED BY public.metrics.id;


--
-- Name: trials; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.trials (
    id integer NOT NULL,
    experiment_id integer NOT NULL,
    request_id character varying(64) NOT NULL,
    hparams json NOT NULL,
    seed integer NOT NULL,
    state character varying(32) NOT NULL,
    restarts integer NOT NULL,
    run_id integer NOT NULL,
    op_length integer,
    op_complete boolean NOT NULL,
    closed boolean NOT NULL,
    stop_requested boolean NOT NULL,
    acked_run_id integer,
    early_exit character varying(32),
    progress double precision,
    status text,
    error text,
    pid integer,
    pid_started double precision,
    log_offset integer NOT NULL,
    slots json NOT NULL,
    created_at double precision NOT NULL,
    ended_at double precision
);


--
-- Name: trials_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.trials_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: trials_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.trials_id_seq OWNED BY public.trials.id;


--
-- Name: experiments id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.experiments ALTER COLUMN id SET DEFAULT nextval('public.experiments_id_seq'::regclass);


--
-- Name: logs id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.logs ALTER COLUMN id SET DEFAULT nextval('public.logs_id_seq'::regclass);


--
-- Name: metrics id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.metrics ALTER COLUMN id SET DEFAULT nextval('public.metrics_id_seq'::regclass);


--
-- Name: trials id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.trials ALTER COLUMN id SET DEFAULT nextval('public.trials_id_seq'::regclass);


--
-- Data for Name: checkpoints; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.checkpoints (uuid, trial_id, experiment_id, run_id, steps_completed, metadata, resources, storage, state, reported_at) FROM stdin;
5e267909-2350-415d-b0c5-54cc94682cf2	1	1	1	10	{"steps_completed": 10}	{"metadata.json": 27, "state": 7}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558918.705797
14a7946f-4266-448e-a59e-1b77f83747c9	2	1	1	10	{"steps_completed": 10}	{"metadata.json": 27, "state": 7}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558918.7221045
8eb986cd-2a57-4345-b734-4825a81387e4	1	1	1	20	{"steps_completed": 20}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558918.818868
f24da5a6-5310-43f6-8f31-111653fca3f0	2	1	1	20	{"steps_completed": 20}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558918.832399
e6a44805-87f3-4f53-8a71-e25fd37dfb1a	1	1	1	30	{"steps_completed": 30}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558918.9301465
7b9a3c3d-0f5e-421a-8e4a-fa87c94c6e1b	2	1	1	30	{"steps_completed": 30}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558918.9440658
a39afa05-f45e-48a0-8ace-502b2acd038b	1	1	1	40	{"steps_completed": 40}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558919.039055
7141e967-97e5-4f89-b0e0-635b2897d943	2	1	1	40	{"steps_completed": 40}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558919.052599
6bf262ba-c7cf-4f1c-874d-eb7fc8c3a5d3	1	1	1	50	{"steps_completed": 50}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558919.1476557
10695c46-f372-48fd-8c5e-483f057b2c61	2	1	1	50	{"steps_completed": 50}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558919.1625054
39da1046-a959-4663-bfe8-04bb16cf0313	1	1	1	60	{"steps_completed": 60}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558919.2567334
bf74bc8c-5da2-4e0f-8688-7df5b0bcf23e	2	1	1	60	{"steps_completed": 60}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558919.2724724
1efdc1eb-67b4-4af6-adcf-014fcd9c6248	1	1	1	70	{"steps_completed": 70}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558919.3651636
046a086f-f470-4b9d-9dae-75ca497d70e9	2	1	1	70	{"steps_completed": 70}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558919.384484
f6cde0c8-3d06-47a9-9aca-a9aeed846322	1	1	1	80	{"steps_completed": 80}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558919.4741101
4c812fb1-cf0b-4a40-b02f-5d1f985e2d88	2	1	1	80	{"steps_completed": 80}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558919.4932582
21afe892-9c5f-4121-a4ec-e775eb2ea8c8	1	1	1	90	{"steps_completed": 90}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558919.5832417
9b32e30e-62ff-43d9-8063-695ed2c48a28	2	1	1	90	{"steps_completed": 90}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558919.6016097
766d13a6-7fe1-472a-9df2-4c4711c9f3e1	1	1	1	100	{"steps_completed": 100}	{"metadata.json": 28, "state": 9}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558919.6952393
3fe2f1c2-5e30-4d02-a85b-47ced181cbd2	2	1	1	100	{"steps_completed": 100}	{"metadata.json": 28, "state": 9}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558919.7147195
ebe7484d-a334-40aa-9742-0b863437292d	3	1	1	40	{"steps_completed": 40}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558920.6499777
8c1a3665-0fa5-4f55-bf70-0dc9b5088414	4	1	1	100	{"steps_completed": 100}	{"metadata.json": 28, "state": 9}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558921.372453
273be507-5a54-4d72-bfa9-34f9ad3caacb	3	1	1	10	{"steps_completed": 10}	{"metadata.json": 27, "state": 7}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558920.3155234
1bb4c272-cfaf-497c-ab60-456b6ff8310d	4	1	1	10	{"steps_completed": 10}	{"metadata.json": 27, "state": 7}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558920.3820505
a8956d28-33c6-46ce-8a1f-f245fa87b57b	3	1	1	20	{"steps_completed": 20}	{"metadata.json": 27, "state": 7}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558920.4270253
6c8dee95-c6b8-4d5c-b8f6-d8bdfabde54f	3	1	1	50	{"steps_completed": 50}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558920.7597425
8c79b2c5-a02f-44b5-86c5-1e3e2fe8243b	4	1	1	50	{"steps_completed": 50}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558920.8202558
efe48a57-feec-4862-a015-f9b015ce9658	3	1	1	70	{"steps_completed": 70}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558920.9802074
9fd85f51-ab86-4698-a794-8cd4ad4527c4	3	1	1	80	{"steps_completed": 80}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558921.0884926
f69f6a8d-84d4-4863-95bb-f56d814baf7a	4	1	1	90	{"steps_completed": 90}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558921.2580352
9ba5a639-31ab-465b-909e-fe4ccdeded97	3	1	1	100	{"steps_completed": 100}	{"metadata.json": 28, "state": 9}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558921.3072667
85b1daba-d3fd-4dc0-a3ae-0c83b6a1821f	4	1	1	20	{"steps_completed": 20}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558920.4919984
e03b83eb-96c4-488f-96a8-2847462609f6	3	1	1	30	{"steps_completed": 30}	{"metadata.json": 27, "state": 7}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558920.5402853
bd715f9e-258b-49af-9dee-291d59768bc5	4	1	1	30	{"steps_completed": 30}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558920.602267
2f02efd1-d4ed-41be-b1fd-28d1643eab02	4	1	1	40	{"steps_completed": 40}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558920.7122204
a409d4c8-b350-46cb-9b12-b82b963d24fe	3	1	1	60	{"steps_completed": 60}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558920.8688333
8338b102-83b3-4b92-8145-950325af537f	4	1	1	60	{"steps_completed": 60}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558920.9284956
b29e6adb-9415-4c6b-841f-4c8a20113c14	4	1	1	70	{"steps_completed": 70}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558921.0403428
de6bf4a3-9dbd-4f29-9790-ae2a6c3f5e50	4	1	1	80	{"steps_completed": 80}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558921.1487455
56477676-bc47-4d75-83f4-927486a5b574	3	1	1	90	{"steps_completed": 90}	{"metadata.json": 27, "state": 8}	{"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}	COMPLETED	1795558921.196893
\.


--
-- Data for Name: experiments; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.experiments (id, name, description, labels, config, model_def, state, archived, unmanaged, progress, searcher_state, error, created_at, ended_at) FROM stdin;
2	core-api-stage-1	\N	[]	{"name": "core-api-stage-1", "description": null, "labels": [], "workspace": "", "project": "", "entrypoint": "python3 1_metrics.py", "hyperparameters": {}, "searcher": {"name": "single", "metric": "x", "smaller_is_better": true, "source_trial_id": null, "source_checkpoint_uuid": null, "max_length": 1}, "resources": {"slots_per_trial": 1, "max_slots": null, "weight": 1.0, "priority": null, "resource_pool": "", "shm_size": null, "is_single_node": null, "devices": [], "native_parallel": false, "agent_label": null}, "max_restarts": 0, "records_per_epoch": 0, "scheduling_unit": 100, "min_validation_period": {"batches": 0}, "min_checkpoint_period": {"batches": 0}, "perform_initial_validation": false, "checkpoint_policy": "best", "checkpoint_storage": {"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}, "data": {}, "debug": false, "environment": {"python": "/work/venv/bin/python", "image": null, "environment_variables": {"cpu": [], "cuda": [], "rocm": []}, "ports": {}, "proxy_ports": [], "force_pull_image": false, "registry_auth": null, "add_capabilities": [], "drop_capabilities": [], "pod_spec": null}, "bind_mounts": [], "optimizations": {"aggregation_frequency": 1, "average_aggregated_gradients": true, "average_training_metrics": true, "gradient_compression": false, "mixed_precision": "O0", "tensor_fusion_threshold": 64, "tensor_fusion_cycle_time": 1, "auto_tune_tensor_fusion": false, "grad_updates_size_file": null}, "profiling": {"enabled": false, "begin_on_batch": 0, "end_after_batch": null, "sync_timings": true}, "reproducibility": {"experiment_seed": 1795558922}, "preemption_timeout": null, "log_policies": [], "retention_policy": null, "integrations": null, "security": null, "slurm": null, "pbs": null, "tensorboard_storage": null, "data_layer": null, "internal": null}	\\x1f8b08000a0e066b02ffed5de993dbb615f767fe1588763aa61a2d4d497b244ad5a9c7715a4f13db4d33ed078f8782444862962458825c69b3f6ffdef7001e20c5bdbc57620333bb1245e0e17a78c7ef81a0f3cc79f6b7b774fb0f467d963eb997e4aa74d1a7eb8e8eeaeff8fbd01d0dc74fc8f6c903a45c643485ea9f7c996934225116446c3a3cfef6f0f0f0c81d7ee3b8d61393be90e47ac8ff99939cdd631d908e8e0e2e5cffc7e38327c3c3b13b3c7087a3a311acffe1e1c1e809711f72fda79c6797e5bbeafe1f34f57abd7f6774c5883b219424210d6292a5f03f885724e43c21d99a66e424e61b41629eadf1773ae77906d9021a9e0419b105633e71dde18014ecd47780ae650551c2d30cc8ac5650acbc4471635996cf9624828aec3ed9ff2b79cd6336b108a42d9912577e5bf294cc69b6581368544ae315b387aedb57d954d6afa764585d226147848c25b6ebb8c37e75a3688013c44b6e2f7b92e6f45c7e7c24dbe9f9f663afce1c2c8b4aff44862e994ec9b775851dc4cac19a908bc9b68a9cd230f06916f078526583c15a12cf8b69c43c0f6bed791e8e8ee7f5260d1a732a82c50b1e2f83951db253164ecb3baf5efff046d5a786f55a52dc31fadfe87fa3ffbf78fd7f46a3f0b1f4fff0f8b0a5ff47eee1d8e8ff8748a8702664c153b64f93605fa02db0ef5a2cced2b38407713621c959b6e6f198d4a6a2650946d3c59aa5a89b1409012a2864701931300c16a0d9f03bdd7a218b57d97a027adac2cb94492a62428c98f91d24a3ff8dfe37faffcb4d434fc96b718f08c015fa7f38eed2ff4746ff3fa8ff3f9c909429ffbc74ff69ec93da572d14bb20d93ae5f96a0d9f8cbc00c3813c7ffbea6a7fbfbc2841032a88cf326b99f2a8feb1c884e6888e10e0b5b7e071c6b69932569c17eaeafeb10391b14440e55112b28cf9508122fbb556185cf776b6123c709be081de13470eb4a346dd2b47bd5c8f76a35c474ba6adeb413941d3f3deb607f6d7c70605d5a38bebaf27ba6ac18d2bbc33186380f317d16c0a2ce2fcf8e6efde0f6f7efee9f92faa0f9b205b2b268001cbec3eb2528343aa7eef30cf54bfe81b3567ec3f63ff19fbcfd87f68ffdd1f027435fe73dcb6ffc647c7c6fe7b34fc67d889ffe8ae8241808cfe37fadfe87f93fee8f3ef81105f9c48517f5f18d015faff6078d4deff313a1e99fd1f0f8bff8cc00aa83861404049e711230a9e593312d20cd476230bc2436018f03c2549ca58944894c84e682ed8a51b40129aadc3607e27f890a0a70ce352195380c9764264e35a5845f1ab24e405e565dd1bcf0f52b6c8787a36299be7bc854fab053029eca1a398f32b5c6349bb275bd3eb3b3c61b1dddbf42440b1ac5189a5b3490368efb277befd38386fb5147e295ba9f685602f434efda29737ee82ec419603f54fed42bad385edce00434b4e1244b154ebc894d840dc5e062cf4fb128d935f118d5b3a29181b76df11491864766fd0eb2b602758b6894ceb19abea4e5996a7714713648e3df29cc46ca3ca910d4da37d696d325ff132c53d4c2c55f79f0a6d2026e484b14432fb8605abb55a045816f82d8f33c4a6ac6603dceb81948362f578faea69cce38530a6ac1f5141053a963fc348ed902481dca0a59169806515ea579770b07f784b4efa0e4139e978ab0961ca816fb5aa833f07b22830f005686c93c680dc009d1d7daee86cd58e7a754229ead38c42cfce7b2d9a40a62d3c1a642e9d7b6de63baa93736fe35d9c6d9e82868039ed4f76bb5dcbdf2ea1d0e606bd282e77bd71851271c49ae7a1ef15977647a56a057e3680366e0b84f9c55b2b062b30049b84a59edc2d586c20dc59ec5359cae990024b458f8582495920096872599693d74ef56ba3d0fef0b630fba502cfc0eec6ff37febff1ff4dfafdf9fff71303b80aff1fb9e396ff3f1e19ffff11f1ff5127fedf868a4c0cc0e87fa3ff8dfe37e90f9cc6de3a5162fcfe36805ea1ff0f8f60fdb7f0ffd1d0e8ff87c5ffc713b23e4b589ad0143479c652a2d8e23bb51f94649c30ba589352e7130e9925bcf25410a5dd07d50ed2352b0c0013063061809b86010a7cbd034fec5f1a2250e8151673fb7705cc0fe0df226511d8c3defcec8bc0eacb7ccd82050cd9a8b42259c18c38c13cc1d96d74a394194e2533840eeb6ed641c88a7aff02e59dc2596876052302fa645897a0ef9d71804bb779df2c5070db60c1ed0306bb41034c3076451b9294af80657630efdd3277146c78a880c32d830e97b171573cf16e0216ada045990a1ed5235d7ba4f71f15b86030e2b522458981577e00fd8e178cf0252c0915d224b052574ca95db5d4886a1208dbd877b4631084806ed2b9b0b7649f1cb86e9f3cc30feb6a9eee88a6589fc8cdd80ce81b7e0c489bb7ebd9aa79b9a2626399424c49b1da358f5fed4ce43525acc6a0d7e17ec5b18d4190ecdb1a969295ebdf5bfc714366fe7d04a4a8100c2c309951d365036d407ad91aeeb02dc5ae9098315f00ab4614494d6a5b8e6d41270428d309c8761805a2b924884712a767d59c71fd48d835e25e32cb5a5abca299a3f8f15e036183b2ea773d5daff5de3f6484cce03f06ff31f88fc17f0a61fb18f88f7b70bc83ff1c9af8cf23c67fc69df19f065468594db448a0166cf8ca4aff4226e935ab73a98218ecc84961ee46742bafbee90a24a534f679a40592d0f4834b11d130445b4478739615a644ceda512669d3e22f52d98a093928ae41312ff234c53696b74696058666cafd7c11cc8330c864db6bbbc4c3e3cd80c2e8730c5d19fd6ff4bfd1ff5f6e3af010514883790edee6a33cff313c38381ced3cff313e34faff41e33f0713a27142750888437e41375e2cd22091b0759009c2373138b6792c55b6f28f634e68baca515f621e851e0b8bc78c6c787ac25292604829e419b1651c090c0eb006f8091e3492695580733d9b15457e7efefa9fe4c7372f9effe8e1d7d9acaf9e3ac9d6cc5259d013e7a91fc4081c741d4cf25490efeb6e15b8ff0da252ffcb195817c585c8e760272c185822e52f67d557a81d74e85d9d7b62025a26a065025a8f1ed0ba20ae74dfc1ae3df2aa9c25323f53c07e1e21e6cf4e597a568854906dfa64e2594d3943fe246cb904de6f916ce4fd7341430c08484629b1d778c43385ce44511e070b75e853023e509005a78cd04c16e93b0db2e08d793a61c4511bc3a19b17907945f1f12b5b2fd2df8df34167ed1dcafdbb8ff8ed11c123862a007a0e0a835111e0c3619ce052464ee771a8c67fb10e60fd4909272331d1a5cfb2e8bd0657f6e4821862eb60e8ad5a461bd23c91fae6b1c93df2a6d9ee889eed1cef559ee7851ab50c170e083035ea1ea2eff5bc321276cdeede45d8f46e42a7dde1d34f0da1de7118f50e43a9de05c1c83b88a2de2692ba475e6a720cda7b22beabb9f529f2a4d8c00dbb7afe58c58dfab82ea13eb50251f8388f14a5e517aeaf8e13f37085d5ebb6d60bd62dd6d3a7876aeffa69c5ae40edb6d0bd7b84aea06983aef102d30d34b72e68ac6b8f851cd2df43fcb77b99dd38a62b8de1c2a392e15c1b5d25e101ab7831f75961bbc579242f456925a75c080f47a5b6e410b3958d51ae1d70648713f69dd26d8c2c691082d43f09c2504e0f5a6572700ba315dd3db60dd037f199f49b64a01bbc20d4f4efde579650c817d0273941f533be8d3e6863a4e6516b3ed823cdcca0c76b8af5fe840815fdbb960edfa434515460712f832d8807e962f23c4bc0b60903ec3fcefc3bcc347dfd1ea6842ba5bfa0319983e7c8c184a7090c56731acf84c3b66c9167741eb201e9ed473df85fba6d8e9a31a7aabf87739ddaf8b58fb9f77b8356534baf97b57d5e5accd0a5f57bde128c47cf03da2a77b342fc5a0f5abfaefb3d56bd8cc05910274152fd2c67d1a1093843be5dfbb6ce5be91ec158f7ab55fc5f0a2c80d30c22b76939c2aa4994555abc1b047ac541f6c167c55ff86a111d5cf895cfe5849422023c621004058b6ee4ce15f994fe2600ff674dcb07ef7d742e9447eefc0bff032f685776d15a5c4b1b68af07edf514511bbb3621ed3eb63c9f724c1c2c6dd7420eeb7580932495a212e5edcb355039fece2ff29badb6e34c5b6d18204022a67632e82bc751ba0e720eea55845b2a4ada75a35036016f164dc2e5e8e1726c1c76ea55d49a9dc17d1cd87e6891dd78c989eca95ae592d857a558d5e8ef689dd2606569ca53b0588b393b97c41270ed656998e242d20291f356456dcb56ef4e2b6b235f73c8265d7a3f71121e86761fcde8e6b43676e93828ed8ac1b86cd01137b01b2e7cd5d64264abee2b81adfcc54f90da03a513bd204125037ca2dda997b38aa2b5381616268c33be8c87d676fd124372d832f463a09528fe90022c589fa5e8ca49e3a932ad5ea8ed3daf70f78b5a40da5255de9cb38ba1d90d613ec57fb5c011c16f6c5a757b47b80fb42d6965ffa6f5d7f66d49ed220af5604eebafeddbcdf668778b819f965f06da56a3d6be1f6d54a6daf787d80ef4f9eff96a86211e7ddb97556aebd867bf9df25cc84c387668d677ad9c8ed58fd014e851491eef40cd058651af0c2d0bf208cc2914a6be9f1639350ba968689dadb28c4ae6ddcd2229bd73df971dd2b1fc348f0599839e450656473c29fb136126790a4e81b0a34ea08549a57e732a1c101a8f460a68b6d33e32e6b0e67e65bcc0c2b9ccaed584a32e174be0b4ec7756d5f26ef4be7ca756656fb6728c8b1cba70be56adb52056325817bf9feba91526fe6fe2ff26fe6fe2ffb5e27df8fd7fe3e168e7fc0713ff7fc4fd7f079dfbffda5b45aede0288a73da44cf03c059f1befd66a58da5b72efdda71c22e1bae61809a3ff8dfe37fadfa4dba59f5f3efffea7974ee4df631d57bdffeb68d8deff3f748fcdfb3f1f24ed553be54896675c9e9a5bbdcfbb8f71bb0ab6b1ac97f20008b95d90fabe02f8abe24b46b33cc5580aa1da9bc3d50bb2450ff7b154c6817abb18baed6c859adffa5090fda0087f4074827cb03eecefef577f906956bc837406398a97914f80d05903d3c0684aac634c50ae869e4ac4497ff12d71c8fe7246640dd55b2eb08e99f6d8df6c5041accf3a62bc9d9534dfaea257d3384c0babd22ecbd3b7313c980bf68c2eb2e014c975d6b17b829b5e4ffdd00656d232d824b433ebdcb034ebae6ce7d9ccbaa6867988c53bf77eb6b78f028bcd3ab708cd0a34665f468e5580f98251ee020f8b765933fdad2533d5e1f64166f07328b864b94d05a72bd092d8b3aed79fccfaf2d9ec330bfec5b260102bb0884488fc6135b89f8ae4326231eb423e4368f34cc6d3e4f62e9812c7e85d934c32c924934c32c924934c32c924934c32c924934c32c924934c32c924936e99fe0fb994965300a00000	COMPLETED	f	f	1	{"method": {"version": 1, "searcher": "single", "generation": "0.37", "rng": {"key": [2448377395, 3309151791, 1960326557, 649516118, 2014383102, 2142365080, 198307963, 3947964238, 2274592577, 2868524935, 299342653, 958316495, 728791402, 1263264666, 4257183962, 3514011961, 2501696451, 2756284922, 3612888946, 2749077111, 4099781384, 2328263843, 477176368, 306658728, 2466810562, 3127366400, 3435488400, 3941715129, 1795276069, 576436915, 4150579247, 3389857749, 1813391322, 1220819690, 3121427424, 584543728, 3400174688, 3902518393, 1027816106, 137798806, 2528960422, 4157552104, 735284304, 1820041110, 1458736857, 3639426861, 2043985896, 2303201300, 2121452179, 2440251745, 3740867670, 3545845290, 415673300, 1863769649, 1693352839, 1753857947, 3007907595, 1999107101, 1173978042, 338885732, 3987670027, 269918697, 1561141060, 1754866241, 1704556257, 3922596001, 1212591164, 947351326, 2729313569, 1494696672, 2052998415, 3169366311, 450950618, 3505163876, 3198985979, 3156076571, 2276088872, 3020199119, 2764954364, 765907238, 3001801044, 2919238598, 973734373, 1575684718, 3722620281, 1121765818, 2825628891, 1171584149, 1608377538, 3227135951, 3710669735, 522223886, 469946625, 923604410, 419607484, 2558200613, 3563610464, 2613613521, 1488077356, 2331299719, 3855310918, 607883513, 817754791, 3593811335, 657678965, 486504071, 293816851, 2730169596, 3691277301, 3158610349, 1211239689, 604929452, 3984893741, 3677315802, 545138173, 860633339, 2095143137, 2707857067, 1231078381, 577750065, 3206425143, 2399012737, 780829225, 2286560767, 3917629592, 4247163627, 786830666, 3818009051, 4231033498, 1830630919, 148077528, 1277613794, 4029531250, 856282311, 3090572915, 493876241, 320520615, 1462664216, 3561866622, 1806691386, 3489934856, 839471468, 1014832027, 1058541855, 3205789263, 3765480756, 1709188351, 3928226893, 2646883958, 789977797, 770916424, 950426568, 1245726205, 3659109846, 3591380061, 3517856269, 1458676589, 219868567, 2415673993, 1468350082, 2999186845, 127745076, 1220513602, 3743676549, 469171273, 1679116305, 785082436, 501139956, 4290182564, 590577676, 4079315013, 986139280, 1209080882, 1965611874, 3060544161, 2201195663, 1362766798, 2283979310, 646813393, 6372350, 2805616085, 377237054, 1621843626, 1516575943, 2882443623, 2096866946, 721370003, 3766707372, 339703397, 3681426713, 1432167906, 4061710198, 3499431854, 3407423890, 3434093817, 1845335713, 2047349412, 1071134544, 2863542521, 3677295935, 2285315808, 3768638459, 2179297063, 3648405750, 758748968, 1945282227, 3386614137, 702270510, 1213743487, 3423247216, 2150368502, 2539201567, 1440877188, 1231288089, 4279712447, 2131771844, 2028526002, 810249374, 2949689046, 1510763107, 3786228117, 1278995252, 2443155236, 1453075330, 2906593691, 4246445779, 3502303626, 1757760364, 1873499394, 464187343, 332471766, 2689266986, 1766037478, 495938128, 2103001597, 1938326711, 909584379, 2696367002, 3691765284, 1045701782, 2312317196, 1004225430, 2331404031, 3539573566, 761538670, 298841842, 2189744350, 2030058764, 3237496722, 1794844765, 1632014436, 105101489, 2855242765, 2625341611, 1386396320, 1459543995, 327516474, 1394668464, 1673983947, 1288596093, 1220410866, 2536658715, 1429276712, 922232940, 1994860133, 2693750099, 284121504, 3250096543, 212236713, 989377677, 3304430577, 1729186809, 4124284406, 3388305301, 238514872, 2474423418, 1257255555, 576955232, 1926432397, 355111984, 2981604363, 4167763392, 2140149923, 3110794925, 3458558414, 142852106, 2895605828, 3158440653, 2953997208, 55579096, 3428700803, 623980927, 1590652822, 768021692, 18440408, 1559545911, 3108788803, 1959891086, 1801502189, 3957909545, 2025906249, 3308103565, 3421429798, 324748972, 3256922114, 441947407, 3378946979, 4133468373, 2061452035, 3485379534, 4188834926, 2706233675, 1057759700, 1706621982, 632968802, 3041714755, 1537072804, 666987970, 2753620944, 2083181473, 2056708706, 605148005, 2266435796, 2420250418, 814789618, 1727418915, 3173772742, 652433423, 2049500947, 956136272, 372806123, 2680580189, 3541413868, 4015500302, 2080518837, 1808314274, 14344994, 1519744816, 2634839893, 2171598368, 3418019492, 543654300, 3958485679, 4182550795, 3068674787, 1817686776, 563436440, 2783921516, 1320726126, 2585548711, 1504140319, 1990007418, 2550182372, 2815755483, 4100790001, 2247951667, 866768042, 1703674199, 989973390, 1811962287, 1389622865, 1384771414, 2269245081, 2346514883, 1139193384, 4210471129, 483846610, 457659776, 857005266, 1237335951, 1167929258, 134977861, 1429000488, 1505624149, 3410938573, 285756231, 1997396351, 490439511, 937102435, 71554349, 1720080327, 4207056472, 2527225611, 841732334, 428056245, 3001671074, 1214491369, 4035493129, 2198035405, 3557081838, 3857561168, 2543161577, 907442492, 1443732325, 1738741996, 75687982, 2910947484, 459268773, 2906278125, 2434324004, 1575296170, 720444701, 4080438697, 2394885070, 3830741309, 4294120345, 1712264274, 176250192, 2303783087, 2151120863, 3998932679, 3836066051, 3651557919, 1739901357, 1388320054, 269178988, 1628526235, 1513673824, 723260201, 27972120, 3163067935, 996339687, 3830653574, 3254047013, 4044938176, 406452116, 1760680431, 4082325180, 3890843182, 3863756380, 3485400807, 609780133, 3167274104, 1239042761, 1769961948, 732403142, 3822201082, 913948886, 874853558, 79819851, 3059384804, 3364775160, 737357034, 1870752694, 3998823830, 897517677, 1152087397, 3038231606, 3888387780, 3921577251, 1769638613, 2105924550, 2471727255, 1378325308, 1258985839, 2463193021, 3456046393, 3544236630, 4294112900, 35163159, 521121534, 1401550448, 1392058764, 3672402008, 1246710140, 2429916965, 2492973831, 4056453913, 432484208, 808780923, 545457036, 1069768835, 4173157413, 2424553163, 2904520450, 1687839832, 3601259957, 1416179398, 2132250176, 1427431040, 1336446683, 2979920950, 4246098906, 1136045687, 3316948028, 3414035312, 3019238254, 415868455, 802873145, 1943136750, 788653738, 1749527921, 81231446, 36742745, 714312847, 1034812170, 873741943, 4202497130, 1736506154, 2869604386, 356529225, 2599738043, 3523308965, 1940422260, 1537240029, 3556879122, 4015943757, 3967421510, 530538469, 1005982117, 1780812208, 923222448, 2238189904, 471051447, 1590462928, 3016058132, 3861222052, 3340847569, 2998905853, 3857620526, 3101182404, 3376254514, 1989576086, 905602465, 1599438148, 2603365602, 963834250, 2151143837, 1028160680, 2638155318, 3454202061, 630761162, 3564267624, 367289286, 4283724277, 1526151599, 2850253518, 1827526158, 3518155261, 3583827448, 2991690313, 3930326131, 3038879051, 1190902172, 2816634677, 1284529151, 2912041560, 3636991359, 4074753979, 1063684897, 1449110503, 2693848213, 381376743, 1118580633, 2746565957, 3463817565, 2882912964, 2979902036, 590830965, 4075922791, 2402444339, 2600297245, 2758673882, 2589653842, 2003406568, 896153487, 322774763, 1276118985, 375198357, 738069895, 4166379592, 2303777134, 431792885, 2335106229, 1009530922, 2167022715, 2814723618, 2970402343, 3666608097, 2910173458, 2455826488, 1013838545, 2403319874, 1396245246, 799200055, 682601099, 2581299913, 1087206514, 2870662425, 2738181486, 2746672270, 2488075809, 4285075600, 236365604, 4004360899, 1148079049, 1882974475, 4116550788, 3437432641, 2954338839, 3488192518, 425410706, 122818855, 665275148, 4043045280, 430188180, 950877560, 2607318046, 1959226889, 39695421, 1246136450, 3841971087, 548132086, 3489416842, 3171892350, 4026229007, 3200159032, 365253173, 1923850698, 1089132091, 612667938, 3461858783, 2790585250, 2088672090], "pos": 5, "has_gauss": 0, "cached_gaussian": 0.0}, "issued": ["ce1f5582-f378-41f7-aeec-d618f143f41d"], "inflight": {}, "finished": ["ce1f5582-f378-41f7-aeec-d618f143f41d"], "exited_early": {}, "closed": ["ce1f5582-f378-41f7-aeec-d618f143f41d"], "failures": 0, "cancels": 0, "started": true, "done": true, "progress": {"open": {}, "open_sum": 0.0, "closed": 1}, "strategy": {"created": 1}}, "pending": [], "shutdown": true, "failure": false}	\N	1795558922.3191674	1795558923.6732597
1	core-api-stage-3	\N	[]	{"name": "core-api-stage-3", "description": null, "labels": [], "workspace": "", "project": "", "entrypoint": "python3 3_hpsearch.py", "hyperparameters": {"increment_by": {"type": "int", "minval": 1, "maxval": 8, "count": null}}, "searcher": {"name": "random", "metric": "loss", "smaller_is_better": true, "source_trial_id": null, "source_checkpoint_uuid": null, "max_length": 100, "max_trials": 4, "max_concurrent_trials": 2}, "resources": {"slots_per_trial": 1, "max_slots": null, "weight": 1.0, "priority": null, "resource_pool": "", "shm_size": null, "is_single_node": null, "devices": [], "native_parallel": false, "agent_label": null}, "max_restarts": 0, "records_per_epoch": 0, "scheduling_unit": 100, "min_validation_period": {"batches": 0}, "min_checkpoint_period": {"batches": 0}, "perform_initial_validation": false, "checkpoint_policy": "best", "checkpoint_storage": {"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1, "type": "shared_fs", "host_path": "/tmp/trialkit-fixtures-pjjluk1w/home-pg/checkpoints", "storage_path": null, "propagation": "rprivate", "container_path": null, "tensorboard_path": null}, "data": {}, "debug": false, "environment": {"python": "/work/venv/bin/python", "image": null, "environment_variables": {"cpu": [], "cuda": [], "rocm": []}, "ports": {}, "proxy_ports": [], "force_pull_image": false, "registry_auth": null, "add_capabilities": [], "drop_capabilities": [], "pod_spec": null}, "bind_mounts": [], "optimizations": {"aggregation_frequency": 1, "average_aggregated_gradients": true, "average_training_metrics": true, "gradient_compression": false, "mixed_precision": "O0", "tensor_fusion_threshold": 64, "tensor_fusion_cycle_time": 1, "auto_tune_tensor_fusion": false, "grad_updates_size_file": null}, "profiling": {"enabled": false, "begin_on_batch": 0, "end_after_batch": null, "sync_timings": true}, "reproducibility": {"experiment_seed": 42}, "preemption_timeout": null, "log_policies": [], "retention_policy": null, "integrations": null, "security": null, "slurm": null, "pbs": null, "tensorboard_storage": null, "data_layer": null, "internal": null}	\\x1f8b0800060e066b02ffed5de993dbb615f767fe1588763aa61a2d4d497b244ad5a9c7715a4f13db4d33ed078f8782444862962458825c69b3f6ffdef7001e20c5bdbc57620333bb1245e0e17a78c7ef81a0f3cc79f6b7b774fb0f467d963eb997e4aa74d1a7eb8e8eeaeff8fbd01d0dc74fc8f6c903a45c643485ea9f7c996934225116446c3a3cfef6f0f0f0c81d7ee3b8d61393be90e47ac8ff99939cdd631d908e8e0e2e5cffc7e38327c3c3b13b3c7087a3a311acffe1e1c1e809711f72fda79c6797e5bbeafe1f34f57abd7f6774c5883b219424210d6292a5f03f885724e43c21d99a66e424e61b41629eadf1773ae77906d9021a9e0419b105633e71dde18014ecd47780ae650551c2d30cc8ac5650acbc4471635996cf9624828aec3ed9ff2b79cd6336b108a42d9912577e5bf294cc69b6581368544ae315b387aedb57d954d6afa764585d226147848c25b6ebb8c37e75a3688013c44b6e2f7b92e6f45c7e7c24dbe9f9f663afce1c2c8b4aff44862e994ec9b775851dc4cac19a908bc9b68a9cd230f06916f078526583c15a12cf8b69c43c0f6bed791e8e8ee7f5260d1a732a82c50b1e2f83951db253164ecb3baf5efff046d5a786f55a52dc31fadfe87fa3ffbf78fd7f46a3f0b1f4fff0f8b0a5ff47eee1d8e8ff8748a8702664c153b64f93605fa02db0ef5a2cced2b38407713621c959b6e6f198d4a6a2650946d3c59aa5a89b1409012a2864701931300c16a0d9f03bdd7a218b57d97a027adac2cb94492a62428c98f91d24a3ff8dfe37faffcb4d434fc96b718f08c015fa7f38eed2ff4746ff3fa8ff3f9c909429ffbc74ff69ec93da572d14bb20d93ae5f96a0d9f8cbc00c3813c7ffbea6a7fbfbc2841032a88cf326b99f2a8feb1c884e6888e10e0b5b7e071c6b69932569c17eaeafeb10391b14440e55112b28cf9508122fbb556185cf776b6123c709be081de13470eb4a346dd2b47bd5c8f76a35c474ba6adeb413941d3f3deb607f6d7c70605d5a38bebaf27ba6ac18d2bbc33186380f317d16c0a2ce2fcf8e6efde0f6f7efee9f92faa0f9b205b2b268001cbec3eb2528343aa7eef30cf54bfe81b3567ec3f63ff19fbcfd87f68ffdd1f027435fe73dcb6ffc647c7c6fe7b34fc67d889ffe8ae8241808cfe37fadfe87f93fee8f3ef81105f9c48517f5f18d015faff6078d4deff313a1e99fd1f0f8bff8cc00aa83861404049e711230a9e593312d20cd476230bc2436018f03c2549ca58944894c84e682ed8a51b40129aadc3607e27f890a0a70ce352195380c9764264e35a5845f1ab24e405e565dd1bcf0f52b6c8787a36299be7bc854fab053029eca1a398f32b5c6349bb275bd3eb3b3c61b1dddbf42440b1ac5189a5b3490368efb277befd38386fb5147e295ba9f685602f434efda29737ee82ec419603f54fed42bad385edce00434b4e1244b154ebc894d840dc5e062cf4fb128d935f118d5b3a29181b76df11491864766fd0eb2b602758b6894ceb19abea4e5996a7714713648e3df29cc46ca3ca910d4da37d696d325ff132c53d4c2c55f79f0a6d2026e484b14432fb8605abb55a045816f82d8f33c4a6ac6603dceb81948362f578faea69cce38530a6ac1f5141053a963fc348ed902481dca0a59169806515ea579770b07f784b4efa0e4139e978ab0961ca816fb5aa833f07b22830f005686c93c680dc009d1d7daee86cd58e7a754229ead38c42cfce7b2d9a40a62d3c1a642e9d7b6de63baa93736fe35d9c6d9e82868039ed4f76bb5dcbdf2ea1d0e606bd282e77bd71851271c49ae7a1ef15977647a56a057e3680366e0b84f9c55b2b062b30049b84a59edc2d586c20dc59ec5359cae990024b458f8582495920096872599693d74ef56ba3d0fef0b630fba502cfc0eec6ff37febff1ff4dfafdf9fff71303b80aff1fb9e396ff3f1e19ffff11f1ff5127fedf868a4c0cc0e87fa3ff8dfe37e90f9cc6de3a5162fcfe36805ea1ff0f8f60fdb7f0ffd1d0e8ff87c5ffc713b23e4b589ad0143479c652a2d8e23bb51f94649c30ba589352e7130e9925bcf25410a5dd07d50ed2352b0c0013063061809b86010a7cbd034fec5f1a2250e8151673fb7705cc0fe0df226511d8c3defcec8bc0eacb7ccd82050cd9a8b42259c18c38c13cc1d96d74a394194e2533840eeb6ed641c88a7aff02e59dc2596876052302fa645897a0ef9d71804bb779df2c5070db60c1ed0306bb41034c3076451b9294af80657630efdd3277146c78a880c32d830e97b171573cf16e0216ada045990a1ed5235d7ba4f71f15b86030e2b522458981577e00fd8e178cf0252c0915d224b052574ca95db5d4886a1208dbd877b4631084806ed2b9b0b7649f1cb86e9f3cc30feb6a9eee88a6589fc8cdd80ce81b7e0c489bb7ebd9aa79b9a2626399424c49b1da358f5fed4ce43525acc6a0d7e17ec5b18d4190ecdb1a969295ebdf5bfc714366fe7d04a4a8100c2c309951d365036d407ad91aeeb02dc5ae9098315f00ab4614494d6a5b8e6d41270428d309c8761805a2b924884712a767d59c71fd48d835e25e32cb5a5abca299a3f8f15e036183b2ea773d5daff5de3f6484cce03f06ff31f88fc17f0a61fb18f88f7b70bc83ff1c9af8cf23c67fc69df19f065468594db448a0166cf8ca4aff4226e935ab73a98218ecc84961ee46742bafbee90a24a534f679a40592d0f4834b11d130445b4478739615a644ceda512669d3e22f52d98a093928ae41312ff234c53696b74696058666cafd7c11cc8330c864db6bbbc4c3e3cd80c2e8730c5d19fd6ff4bfd1ff5f6e3af010514883790edee6a33cff313c38381ced3cff313e34faff41e33f0713a27142750888437e41375e2cd22091b0759009c2373138b6792c55b6f28f634e68baca515f621e851e0b8bc78c6c787ac25292604829e419b1651c090c0eb006f8091e3492695580733d9b15457e7efefa9fe4c7372f9effe8e1d7d9acaf9e3ac9d6cc5259d013e7a91fc4081c741d4cf25490efeb6e15b8ff0da252ffcb195817c585c8e760272c185822e52f67d557a81d74e85d9d7b62025a26a065025a8f1ed0ba20ae74dfc1ae3df2aa9c25323f53c07e1e21e6cf4e597a568854906dfa64e2594d3943fe246cb904de6f916ce4fd7341430c08484629b1d778c43385ce44511e070b75e853023e509005a78cd04c16e93b0db2e08d793a61c4511bc3a19b17907945f1f12b5b2fd2df8df34167ed1dcafdbb8ff8ed11c123862a007a0e0a835111e0c3619ce052464ee771a8c67fb10e60fd4909272331d1a5cfb2e8bd0657f6e4821862eb60e8ad5a461bd23c91fae6b1c93df2a6d9ee889eed1cef559ee7851ab50c170e083035ea1ea2eff5bc321276cdeede45d8f46e42a7dde1d34f0da1de7118f50e43a9de05c1c83b88a2de2692ba475e6a720cda7b22beabb9f529f2a4d8c00dbb7afe58c58dfab82ea13eb50251f8388f14a5e517aeaf8e13f37085d5ebb6d60bd62dd6d3a7876aeffa69c5ae40edb6d0bd7b84aea06983aef102d30d34b72e68ac6b8f851cd2df43fcb77b99dd38a62b8de1c2a392e15c1b5d25e101ab7831f75961bbc579242f456925a75c080f47a5b6e410b3958d51ae1d70648713f69dd26d8c2c691082d43f09c2504e0f5a6572700ba315dd3db60dd037f199f49b64a01bbc20d4f4efde579650c817d0273941f533be8d3e6863a4e6516b3ed823cdcca0c76b8af5fe840815fdbb960edfa434515460712f832d8807e962f23c4bc0b60903ec3fcefc3bcc347dfd1ea6842ba5bfa0319983e7c8c184a7090c56731acf84c3b66c9167741eb201e9ed473df85fba6d8e9a31a7aabf87739ddaf8b58fb9f77b8356534baf97b57d5e5accd0a5f57bde128c47cf03da2a77b342fc5a0f5abfaefb3d56bd8cc05910274152fd2c67d1a1093843be5dfbb6ce5be91ec158f7ab55fc5f0a2c80d30c22b76939c2aa4994555abc1b047ac541f6c167c55ff86a111d5cf895cfe5849422023c621004058b6ee4ce15f994fe2600ff674dcb07ef7d742e9447eefc0bff032f685776d15a5c4b1b68af07edf514511bbb3621ed3eb63c9f724c1c2c6dd7420eeb7580932495a212e5edcb355039fece2ff29badb6e34c5b6d18204022a67632e82bc751ba0e720eea55845b2a4ada75a35036016f164dc2e5e8e1726c1c76ea55d49a9dc17d1cd87e6891dd78c989eca95ae592d857a558d5e8ef689dd2606569ca53b0588b393b97c41270ed656998e242d20291f356456dcb56ef4e2b6b235f73c8265d7a3f71121e86761fcde8e6b43676e93828ed8ac1b86cd01137b01b2e7cd5d64264abee2b81adfcc54f90da03a513bd204125037ca2dda997b38aa2b5381616268c33be8c87d676fd124372d832f463a09528fe90022c589fa5e8ca49e3a932ad5ea8ed3daf70f78b5a40da5255de9cb38ba1d90d613ec57fb5c011c16f6c5a757b47b80fb42d6965ffa6f5d7f66d49ed220af5604eebafeddbcdf668778b819f965f06da56a3d6be1f6d54a6daf787d80ef4f9eff96a86211e7ddb97556aebd867bf9df25cc84c387668d677ad9c8ed58fd014e851491eef40cd058651af0c2d0bf208cc2914a6be9f1639350ba968689dadb28c4ae6ddcd2229bd73df971dd2b1fc348f0599839e450656473c29fb136126790a4e81b0a34ea08549a57e732a1c101a8f460a68b6d33e32e6b0e67e65bcc0c2b9ccaed584a32e174be0b4ec7756d5f26ef4be7ca756656fb6728c8b1cba70be56adb52056325817bf9feba91526fe6fe2ff26fe6fe2ffb5e27df8fd7fe3e168e7fc0713ff7fc4fd7f079dfbffda5b45aede0288a73da44cf03c059f1befd66a58da5b72efdda71c22e1bae61809a3ff8dfe37fadfa4dba59f5f3efffea7974ee4df631d57bdffeb68d8deff3f748fcdfb3f1f24ed553be54896675c9e9a5bbdcfbb8f71bb0ab6b1ac97f20008b95d90fabe02f8abe24b46b33cc5580aa1da9bc3d50bb2450ff7b154c6817abb18baed6c859adffa5090fda0087f4074827cb03eecefef577f906956bc837406398a97914f80d05903d3c0684aac634c50ae869e4ac4497ff12d71c8fe7246640dd55b2eb08e99f6d8df6c5041accf3a62bc9d9534dfaea257d3384c0babd22ecbd3b7313c980bf68c2eb2e014c975d6b17b829b5e4ffdd00656d232d824b433ebdcb034ebae6ce7d9ccbaa6867988c53bf77eb6b78f028bcd3ab708cd0a34665f468e5580f98251ee020f8b765933fdad2533d5e1f64166f07328b864b94d05a72bd092d8b3aed79fccfaf2d9ec330bfec5b260102bb0884488fc6135b89f8ae4326231eb423e4368f34cc6d3e4f62e9812c7e85d934c32c924934c32c924934c32c924934c32c924934c32c924934c32c924936e99fe0fb994965300a00000	COMPLETED	f	f	1	{"method": {"version": 1, "searcher": "random", "generation": "0.37", "rng": {"key": [723970371, 1229153189, 4170412009, 2042542564, 3342822751, 3177601514, 1210243767, 2648089330, 1412570585, 3849763494, 2465546753, 1778048360, 3414291523, 3703604926, 37084547, 2893685227, 1573484469, 1285239205, 699098282, 4130757601, 396734834, 4180643673, 4141803214, 1198799333, 762411010, 293648282, 3223568971, 2632094559, 537008479, 741113140, 4002027498, 2746025092, 2845827535, 548633203, 597320396, 226799258, 2181165042, 904759057, 3103716301, 1585056142, 3155542442, 3259059392, 1167550120, 812911362, 759436139, 1996668977, 2730210635, 1115075517, 2131032978, 3760827332, 1682941722, 3630150104, 1098113545, 3998782595, 1774436391, 3953281111, 968975481, 2255177679, 147678039, 1081024905, 191693936, 2141551523, 2194751066, 2492407928, 2331796867, 1034855452, 2101471620, 1930706450, 2774870738, 3742117124, 3410246986, 738426812, 1576440996, 909810959, 2585550335, 1503306899, 1279279633, 3458744511, 19639984, 400608408, 3794133557, 1164191397, 32361973, 1869322535, 1258736580, 2112226298, 1753875775, 3080725459, 1704317846, 692216276, 910008885, 3951320927, 1678020451, 2108746453, 2473813025, 2140668155, 2374952264, 1845450428, 1813972865, 180582706, 595522541, 2846157547, 1457649532, 1667462669, 4224730633, 3053073989, 3546883933, 1014768041, 1722354799, 2463500692, 305778409, 3277849064, 3164008624, 1336609454, 1460077756, 715014246, 305136029, 3350823438, 614615868, 3849290024, 3348555379, 267754379, 1366497391, 3153349997, 1235694552, 2708283193, 1523934688, 163443872, 1936027436, 1164575522, 2384429104, 3132810649, 3867759110, 13928699, 2831263725, 1487660611, 3899312988, 3474020467, 965592919, 1623214488, 3148531171, 2615382839, 995780112, 3272621256, 3868406123, 1425565652, 1168556130, 191787013, 4132186216, 1832078056, 2730249091, 1005039557, 744379830, 2429705721, 3274236453, 2003618744, 4057204247, 1334649846, 3258833145, 156360238, 1997707624, 1607596560, 804634260, 1642289058, 2596581402, 3984142749, 761455202, 2835267354, 515579282, 2976331924, 1328726080, 1455114963, 78627755, 686843760, 1442591788, 3351298904, 3231216668, 3648171804, 2063874431, 3289887765, 3628774421, 3896074418, 3011607623, 2064874681, 2886938069, 2315012028, 3843509723, 4196178815, 1235160264, 2423388625, 1159958157, 1872653377, 1687893402, 589585342, 1138701492, 560938278, 2103867335, 1257982604, 4077712949, 1602496222, 3255953409, 2219325325, 3352633087, 33012331, 2521639176, 3807312431, 1450401336, 2410712337, 1259821603, 992105284, 4274936745, 213036061, 2574514256, 2434859042, 975759853, 1102559253, 4157239625, 525945330, 4085944608, 2247222697, 3289769485, 213833183, 1533847953, 1204459024, 2732378840, 1348305132, 992079785, 2178206799, 3902526667, 3633622433, 1237142122, 1274808236, 3876303874, 1797971530, 2886894347, 3310927971, 3127495483, 2693438057, 769231615, 4017334856, 3900916796, 2589489449, 4135111451, 1656247967, 403304321, 275090437, 3051025461, 1994976759, 3665886705, 853615821, 236151428, 472223425, 1784956449, 702734087, 898631166, 1078345412, 1533195201, 1309487081, 692522774, 257527429, 3605766986, 53853325, 882545473, 402653360, 868287545, 3676390271, 901992281, 637253246, 3097225963, 2831555516, 3865702628, 3380595174, 3145608873, 1962502477, 788463049, 2633375016, 815432421, 3978650550, 3155495392, 2178459245, 2493007906, 2454126759, 917920555, 3667513996, 661069360, 308246904, 4019711308, 929948834, 1741660606, 2172497240, 660046588, 2828702970, 998731550, 1282327513, 1287814885, 897388468, 3534878016, 2177006980, 3963917859, 2166546582, 1808359274, 3740494836, 3557499298, 3768359166, 1204905448, 3174208924, 2510175807, 161518307, 2978323896, 1063762896, 162675877, 4027373699, 3173572572, 3924799852, 2548653919, 2518236856, 3729019205, 783941456, 224637587, 297326041, 1430777952, 969211714, 3697765865, 3147223755, 841706275, 1259364575, 1338056163, 216159220, 2492447455, 3902503544, 4064435678, 152703151, 108538361, 3072951052, 1709132099, 1101697685, 2307739241, 2119470588, 3841488973, 1415497599, 3423560587, 3837606556, 2422674175, 1447511090, 1301485414, 3843028942, 4136577289, 3507755200, 2686214937, 299182788, 463502484, 2063694198, 2201306416, 3465596623, 1632055513, 3107086159, 850114516, 1360947511, 3808607386, 3001180792, 3412795883, 745581600, 1380897729, 3975439452, 626032055, 756908041, 3613888394, 3670789847, 3780910435, 2573153856, 1805102131, 3493184389, 2124192903, 3241224337, 1512231978, 2316782730, 410404630, 50709497, 3209804236, 3358802474, 1135715054, 548110916, 2608654461, 3002891120, 2304416983, 1538484879, 1572300690, 1066071099, 2369474259, 3318802349, 2758869147, 1933632092, 728842238, 2867852062, 4015293304, 1435816775, 2134345249, 2187315247, 1013454492, 2354119889, 993731044, 1677211905, 2602385536, 2507887227, 110011083, 3674155013, 671387317, 3594399730, 1676734850, 1718176509, 1079289056, 931749015, 2200857294, 2759079925, 285177850, 1730320026, 3403475603, 1095198038, 3817905574, 4286184921, 2088254408, 2039742933, 931692781, 199396417, 1095040489, 2626627964, 1896073355, 526555250, 2381243112, 3474792527, 2409883379, 491414874, 3938067459, 368042914, 591136085, 683533759, 218990941, 1385027868, 2284946031, 2093753317, 211200851, 3525509544, 3696056149, 2129287133, 299597274, 3352653191, 2673424348, 4269490180, 1745050468, 4079497492, 2917382407, 4154021623, 4144100958, 633106765, 2057781932, 4194991707, 1882408650, 1838401667, 524260492, 3352205444, 1064913814, 2233622456, 3960693594, 513988595, 1751548192, 4276190478, 3087181935, 3561946481, 2183883991, 2623467165, 1836523491, 1905200060, 309263029, 3996875255, 3267861855, 3144214669, 1855848511, 1099431242, 2967958827, 320783957, 211834976, 3541726144, 2724780362, 1903394598, 972529034, 2857868925, 136833839, 2451047201, 4125100180, 665864786, 3298359136, 3717331144, 1375035068, 2629300787, 3167305921, 1958815963, 2672828234, 1760829570, 2965548962, 1663931795, 1399418187, 3285735014, 118581724, 3928921722, 3425939801, 913464773, 3159375935, 1562310546, 3390356144, 1888381574, 1575832851, 3615268280, 2637830388, 1732156385, 877000204, 542615219, 1147218233, 3778084403, 3646027153, 4140249417, 475984157, 558893915, 1802862247, 3958193605, 3947624521, 977247689, 3110870581, 3744045244, 576316443, 2267023868, 783216037, 4099572711, 2126790460, 1970612627, 3340972345, 650108624, 233594914, 3610319844, 2912909048, 3453091564, 3935255773, 2603351995, 135197028, 909775382, 3870212926, 2331181780, 1640249080, 2935669211, 2908413467, 1838823573, 784512886, 4121504553, 1150920207, 1135729862, 3057050245, 2197516899, 624464384, 802322502, 1108947143, 18045913, 1451197134, 1479552969, 881725238, 2109363712, 4147956683, 557197352, 327501290, 2559105547, 132952130, 3411735010, 3230651491, 2730328706, 1402012532, 3710460145, 4273435754, 509496610, 3211341583, 1701237758, 1764609488, 4292141877, 3985980417, 4188098333, 3740547671, 2628290373, 3175759527, 2744171633, 1905739216, 431701074, 828729655, 1711260155, 3317916896, 3575642115, 3867606316, 654533559, 543711152, 3200470340, 1956606135, 1368074944, 2687452893, 3033673379, 2485228560, 1109441848, 1974230265, 1591983481, 2469873375, 552950541, 4277631890, 2933432046, 3042696880, 1974809815, 1114707290, 3012528140, 629195624, 4212963909, 4270887460, 1034731946, 1991615680, 3871469903, 3830288218, 3767364353, 3446775024, 1857191784, 1432291794, 4088152671], "pos": 24, "has_gauss": 0, "cached_gaussian": 0.0}, "issued": ["b33deacb-5c03-42f3-8e95-f52e6af463bb", "142ccb98-66d6-4027-b918-2272d241ef27", "ca559175-57b8-4ddd-b4ed-6d5563ace299", "82a0a0a6-9506-4505-b4fd-700e01034cf8"], "inflight": {}, "finished": ["b33deacb-5c03-42f3-8e95-f52e6af463bb", "142ccb98-66d6-4027-b918-2272d241ef27", "ca559175-57b8-4ddd-b4ed-6d5563ace299", "82a0a0a6-9506-4505-b4fd-700e01034cf8"], "exited_early": {}, "closed": ["b33deacb-5c03-42f3-8e95-f52e6af463bb", "142ccb98-66d6-4027-b918-2272d241ef27", "ca559175-57b8-4ddd-b4ed-6d5563ace299", "82a0a0a6-9506-4505-b4fd-700e01034cf8"], "failures": 0, "cancels": 0, "started": true, "done": true, "progress": {"open": {}, "open_sum": 0.0, "closed": 4}, "strategy": {"created": 4}}, "pending": [], "shutdown": true, "failure": false}	\N	1795558918.2585213	1795558921.55431
\.


--
-- Data for Name: logs; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.logs (id, trial_id, run_id, line, ts) FROM stdin;
1	1	1	[trialkit] run 1: sh -c 'python3 3_hpsearch.py'	1795558918.421902
2	2	1	[trialkit] run 1: sh -c 'python3 3_hpsearch.py'	1795558918.4318361
3	1	1	INFO: [9212] trialkit.core: saved checkpoint 5e267909-2350-415d-b0c5-54cc94682cf2	1795558918.743034
4	2	1	INFO: [9214] trialkit.core: saved checkpoint 14a7946f-4266-448e-a59e-1b77f83747c9	1795558918.7461653
5	1	1	INFO: [9212] trialkit.core: saved checkpoint 8eb986cd-2a57-4345-b734-4825a81387e4	1795558918.8538191
6	2	1	INFO: [9214] trialkit.core: saved checkpoint f24da5a6-5310-43f6-8f31-111653fca3f0	1795558918.8579373
7	1	1	INFO: [9212] trialkit.core: saved checkpoint e6a44805-87f3-4f53-8a71-e25fd37dfb1a	1795558918.9608803
8	2	1	INFO: [9214] trialkit.core: saved checkpoint 7b9a3c3d-0f5e-421a-8e4a-fa87c94c6e1b	1795558918.9651163
9	1	1	INFO: [9212] trialkit.core: saved checkpoint a39afa05-f45e-48a0-8ace-502b2acd038b	1795558919.1226187
10	2	1	INFO: [9214] trialkit.core: saved checkpoint 7141e967-97e5-4f89-b0e0-635b2897d943	1795558919.126709
11	1	1	INFO: [9212] trialkit.core: saved checkpoint 6bf262ba-c7cf-4f1c-874d-eb7fc8c3a5d3	1795558919.2290776
12	2	1	INFO: [9214] trialkit.core: saved checkpoint 10695c46-f372-48fd-8c5e-483f057b2c61	1795558919.232142
13	1	1	INFO: [9212] trialkit.core: saved checkpoint 39da1046-a959-4663-bfe8-04bb16cf0313	1795558919.292938
14	2	1	INFO: [9214] trialkit.core: saved checkpoint bf74bc8c-5da2-4e0f-8688-7df5b0bcf23e	1795558919.2959018
15	1	1	INFO: [9212] trialkit.core: saved checkpoint 1efdc1eb-67b4-4af6-adcf-014fcd9c6248	1795558919.4037287
16	2	1	INFO: [9214] trialkit.core: saved checkpoint 046a086f-f470-4b9d-9dae-75ca497d70e9	1795558919.4065166
17	1	1	INFO: [9212] trialkit.core: saved checkpoint f6cde0c8-3d06-47a9-9aca-a9aeed846322	1795558919.509839
18	2	1	INFO: [9214] trialkit.core: saved checkpoint 4c812fb1-cf0b-4a40-b02f-5d1f985e2d88	1795558919.5136662
19	1	1	INFO: [9212] trialkit.core: saved checkpoint 21afe892-9c5f-4121-a4ec-e775eb2ea8c8	1795558919.6719038
20	2	1	INFO: [9214] trialkit.core: saved checkpoint 9b32e30e-62ff-43d9-8063-695ed2c48a28	1795558919.6753242
21	1	1	INFO: [9212] trialkit.core: saved checkpoint 766d13a6-7fe1-472a-9df2-4c4711c9f3e1	1795558919.7092397
22	2	1	INFO: [9214] trialkit.core: saved checkpoint 3fe2f1c2-5e30-4d02-a85b-47ced181cbd2	1795558919.7326243
23	3	1	[trialkit] run 1: sh -c 'python3 3_hpsearch.py'	1795558920.0702274
24	4	1	[trialkit] run 1: sh -c 'python3 3_hpsearch.py'	1795558920.0836005
25	3	1	INFO: [9262] trialkit.core: saved checkpoint 273be507-5a54-4d72-bfa9-34f9ad3caacb	1795558920.3289628
26	4	1	INFO: [9264] trialkit.core: saved checkpoint 1bb4c272-cfaf-497c-ab60-456b6ff8310d	1795558920.39619
27	3	1	INFO: [9262] trialkit.core: saved checkpoint a8956d28-33c6-46ce-8a1f-f245fa87b57b	1795558920.500422
28	4	1	INFO: [9264] trialkit.core: saved checkpoint 85b1daba-d3fd-4dc0-a3ae-0c83b6a1821f	1795558920.5027003
29	3	1	INFO: [9262] trialkit.core: saved checkpoint e03b83eb-96c4-488f-96a8-2847462609f6	1795558920.595111
30	3	1	INFO: [9262] trialkit.core: saved checkpoint ebe7484d-a334-40aa-9742-0b863437292d	1795558920.660099
31	4	1	INFO: [9264] trialkit.core: saved checkpoint bd715f9e-258b-49af-9dee-291d59768bc5	1795558920.6620483
32	3	1	INFO: [9262] trialkit.core: saved checkpoint 6c8dee95-c6b8-4d5c-b8f6-d8bdfabde54f	1795558920.765897
33	4	1	INFO: [9264] trialkit.core: saved checkpoint 2f02efd1-d4ed-41be-b1fd-28d1643eab02	1795558920.7694006
34	4	1	INFO: [9264] trialkit.core: saved checkpoint 8c79b2c5-a02f-44b5-86c5-1e3e2fe8243b	1795558920.8668363
35	3	1	INFO: [9262] trialkit.core: saved checkpoint a409d4c8-b350-46cb-9b12-b82b963d24fe	1795558920.931913
36	4	1	INFO: [9264] trialkit.core: saved checkpoint 8338b102-83b3-4b92-8145-950325af537f	1795558920.934655
37	3	1	INFO: [9262] trialkit.core: saved checkpoint efe48a57-feec-4862-a015-f9b015ce9658	1795558921.0406282
38	4	1	INFO: [9264] trialkit.core: saved checkpoint b29e6adb-9415-4c6b-841f-4c8a20113c14	1795558921.0437415
39	3	1	INFO: [9262] trialkit.core: saved checkpoint 9fd85f51-ab86-4698-a794-8cd4ad4527c4	1795558921.131258
40	3	1	INFO: [9262] trialkit.core: saved checkpoint 56477676-bc47-4d75-83f4-927486a5b574	1795558921.200455
41	4	1	INFO: [9264] trialkit.core: saved checkpoint de6bf4a3-9dbd-4f29-9790-ae2a6c3f5e50	1795558921.202406
42	4	1	INFO: [9264] trialkit.core: saved checkpoint f69f6a8d-84d4-4863-95bb-f56d814baf7a	1795558921.3059845
43	3	1	INFO: [9262] trialkit.core: saved checkpoint 9ba5a639-31ab-465b-909e-fe4ccdeded97	1795558921.3285208
44	4	1	INFO: [9264] trialkit.core: saved checkpoint 8c1a3665-0fa5-4f55-bf70-0dc9b5088414	1795558921.393683
45	5	1	[trialkit] run 1: sh -c 'python3 1_metrics.py'	1795558922.4459019
\.


--
-- Data for Name: metric_batches; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.metric_batches (trial_id, run_id, sender, seq, stored_at) FROM stdin;
\.


--
-- Data for Name: metrics; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.metrics (id, trial_id, run_id, "group", steps_completed, "values", batch_metrics, reported_at) FROM stdin;
1	1	1	training	10	{"x": 70}	\N	1795558918.7051728
2	2	1	training	10	{"x": 50}	\N	1795558918.7262013
3	1	1	training	20	{"x": 140}	\N	1795558918.9913635
4	1	1	training	30	{"x": 210}	\N	1795558918.9913635
5	2	1	training	20	{"x": 100}	\N	1795558918.9993985
6	2	1	training	30	{"x": 150}	\N	1795558918.9993985
7	1	1	training	40	{"x": 280}	\N	1795558919.2646394
8	1	1	training	50	{"x": 350}	\N	1795558919.2646394
9	1	1	training	60	{"x": 420}	\N	1795558919.2646394
10	2	1	training	40	{"x": 200}	\N	1795558919.2744246
11	2	1	training	50	{"x": 250}	\N	1795558919.2744246
12	2	1	training	60	{"x": 300}	\N	1795558919.2744246
13	1	1	training	70	{"x": 490}	\N	1795558919.5397594
14	1	1	training	80	{"x": 560}	\N	1795558919.5397594
15	2	1	training	70	{"x": 350}	\N	1795558919.5487332
16	2	1	training	80	{"x": 400}	\N	1795558919.5487332
17	1	1	training	90	{"x": 630}	\N	1795558919.6991966
18	1	1	training	100	{"x": 700}	\N	1795558919.6991966
19	1	1	validation	100	{"loss": 0.75, "x": 700}	\N	1795558919.6991966
20	2	1	training	90	{"x": 450}	\N	1795558919.7249713
21	2	1	training	100	{"x": 500}	\N	1795558919.7249713
22	2	1	validation	100	{"loss": 0.25, "x": 500}	\N	1795558919.7249713
23	3	1	training	10	{"x": 30}	\N	1795558920.3138745
24	4	1	training	10	{"x": 80}	\N	1795558920.3823097
25	3	1	training	20	{"x": 60}	\N	1795558920.5837612
26	3	1	training	30	{"x": 90}	\N	1795558920.5837612
27	4	1	training	20	{"x": 160}	\N	1795558920.6509764
28	4	1	training	30	{"x": 240}	\N	1795558920.6509764
29	3	1	training	40	{"x": 120}	\N	1795558920.851036
30	3	1	training	50	{"x": 150}	\N	1795558920.851036
31	4	1	training	40	{"x": 320}	\N	1795558920.915082
32	4	1	training	50	{"x": 400}	\N	1795558920.915082
33	3	1	training	60	{"x": 180}	\N	1795558921.1203592
34	3	1	training	70	{"x": 210}	\N	1795558921.1203592
35	3	1	training	80	{"x": 240}	\N	1795558921.1203592
36	4	1	training	60	{"x": 480}	\N	1795558921.1869564
37	4	1	training	70	{"x": 560}	\N	1795558921.1869564
38	4	1	training	80	{"x": 640}	\N	1795558921.1869564
39	3	1	training	90	{"x": 270}	\N	1795558921.3168564
40	3	1	training	100	{"x": 300}	\N	1795558921.3168564
41	3	1	validation	100	{"loss": 0.25, "x": 300}	\N	1795558921.3168564
42	4	1	training	90	{"x": 720}	\N	1795558921.377437
43	4	1	training	100	{"x": 800}	\N	1795558921.377437
44	4	1	validation	100	{"loss": 1.0, "x": 800}	\N	1795558921.377437
45	5	1	training	10	{"x": 10}	\N	1795558922.6571023
46	5	1	training	20	{"x": 20}	\N	1795558922.9129238
47	5	1	training	30	{"x": 30}	\N	1795558922.9129238
48	5	1	training	40	{"x": 40}	\N	1795558923.168967
49	5	1	training	50	{"x": 50}	\N	1795558923.168967
50	5	1	training	60	{"x": 60}	\N	1795558923.168967
51	5	1	training	70	{"x": 70}	\N	1795558923.4248748
52	5	1	training	80	{"x": 80}	\N	1795558923.4248748
53	5	1	training	90	{"x": 90}	\N	1795558923.5702176
54	5	1	training	100	{"x": 100}	\N	1795558923.5702176
55	5	1	validation	100	{"x": 100}	\N	1795558923.5702176
\.


--
-- Data for Name: trials; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.trials (id, experiment_id, request_id, hparams, seed, state, restarts, run_id, op_length, op_complete, closed, stop_requested, acked_run_id, early_exit, progress, status, error, pid, pid_started, log_offset, slots, created_at, ended_at) FROM stdin;
1	1	b33deacb-5c03-42f3-8e95-f52e6af463bb	{"increment_by": 7}	1201263687	COMPLETED	0	1	100	t	t	f	1	\N	1	\N	\N	\N	1795558918.02	868	[]	1795558918.2703521	1795558919.9044023
2	1	142ccb98-66d6-4027-b918-2272d241ef27	{"increment_by": 5}	429389014	COMPLETED	0	1	100	t	t	f	1	\N	1	\N	\N	\N	1795558918.04	868	[]	1795558918.278429	1795558919.9319408
3	1	ca559175-57b8-4ddd-b4ed-6d5563ace299	{"increment_by": 3}	613608295	COMPLETED	0	1	100	t	t	f	1	\N	1	\N	\N	\N	1795558919.67	868	[]	1795558919.9148216	1795558921.5378885
4	1	82a0a0a6-9506-4505-b4fd-700e01034cf8	{"increment_by": 8}	953477463	COMPLETED	0	1	100	t	t	f	1	\N	1	\N	\N	\N	1795558919.68	868	[]	1795558919.9359229	1795558921.546044
5	2	ce1f5582-f378-41f7-aeec-d618f143f41d	{}	1385978872	COMPLETED	0	1	1	f	t	f	\N	\N	\N	\N	\N	\N	1795558922.06	47	[]	1795558922.3251467	1795558923.6655264
\.


--
-- Name: experiments_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.experiments_id_seq', 2, true);


--
-- Name: logs_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.logs_id_seq', 45, true);


--
-- Name: metrics_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.metrics_id_seq', 55, true);


--
-- Name: trials_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.trials_id_seq', 5, true);


--
-- Name: checkpoints checkpoints_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.checkpoints
    ADD CONSTRAINT checkpoints_pkey PRIMARY KEY (uuid);


--
-- Name: experiments experiments_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.experiments
    ADD CONSTRAINT experiments_pkey PRIMARY KEY (id);


--
-- Name: logs logs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.logs
    ADD CONSTRAINT logs_pkey PRIMARY KEY (id);


--
-- Name: metric_batches metric_batches_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.metric_batches
    ADD CONSTRAINT metric_batches_pkey PRIMARY KEY (trial_id, run_id, sender, seq);


--
-- Name: metrics metrics_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.metrics
    ADD CONSTRAINT metrics_pkey PRIMARY KEY (id);


--
-- Name: trials trials_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.trials
    ADD CONSTRAINT trials_pkey PRIMARY KEY (id);


--
-- Name: ix_checkpoints_experiment_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_checkpoints_experiment_id ON public.checkpoints USING btree (experiment_id);


--
-- Name: ix_checkpoints_trial_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_checkpoints_trial_id ON public.checkpoints USING btree (trial_id);


--
-- Name: ix_experiments_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_experiments_state ON public.experiments USING btree (state);


--
-- Name: ix_logs_trial_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_logs_trial_id ON public.logs USING btree (trial_id);


--
-- Name: ix_metrics_trial_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_metrics_trial_id ON public.metrics USING btree (trial_id);


--
-- Name: ix_trials_experiment_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_trials_experiment_id ON public.trials USING btree (experiment_id);


--
-- Name: ix_trials_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_trials_state ON public.trials USING btree (state);


--
-- Name: checkpoints checkpoints_trial_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.checkpoints
    ADD CONSTRAINT checkpoints_trial_id_fkey FOREIGN KEY (trial_id) REFERENCES public.trials(id);


--
-- Name: logs logs_trial_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.logs
    ADD CONSTRAINT logs_trial_id_fkey FOREIGN KEY (trial_id) REFERENCES public.trials(id);


--
-- Name: metrics metrics_trial_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.metrics
    ADD CONSTRAINT metrics_trial_id_fkey FOREIGN KEY (trial_id) REFERENCES public.trials(id);


--
-- Name: trials trials_experiment_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.trials
    ADD CONSTRAINT trials_experiment_id_fkey FOREIGN KEY (experiment_id) REFERENCES public.experiments(id);


--
-- PostgreSQL database dump complete
--

\unrestrict fgVrUMy8xZPtefM187xXx8oX9QRaxJRnJPAWicf4e9VHDt8kladTy6MyHPKpNJT

