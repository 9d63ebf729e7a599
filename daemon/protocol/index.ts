export * from './api';
export * from './config';
export * from './entities';
export * from './events';
export * from './samples';
export * from './tasks';
export * from './training';
